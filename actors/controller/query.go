package controller

import (
	"fmt"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// Store gives read access to the desired state (for the API).
func (c *Controller) Store() store.Store { return c.env.store }

// Events returns the recent events of an object.
func (c *Controller) Events(ref events.Ref) []events.Event { return c.env.events.For(ref) }

// AgentStatus asks a node's agent for its mounts.
func (c *Controller) AgentStatus(node cloud.NodeName, timeout time.Duration) (*messages.AgentStatus, error) {
	to := c.env.lookup.Agent(node)
	if c.env.cluster != nil {
		to = c.env.lookup.Node(node) // it forwards to the agent it knows
	}
	res, err := c.env.guard.Request(to, &messages.GetAgentStatus{}, timeout).Result()
	if err != nil {
		return nil, fmt.Errorf("controller: status of node agent %q: %w", node, err)
	}
	return res.(*messages.AgentStatus), nil
}
