package controller

import (
	"context"
	"sync"

	"github.com/tether/tether/cloud"
)

// instances caches the explicit NodeName -> InstanceID resolution. A node
// keeps its instance across stop/start; when the cloud no longer knows an
// instance, the entry is dropped and resolved again.
type instances struct {
	cloud cloud.Provider
	mu    sync.Mutex
	m     map[cloud.NodeName]cloud.InstanceID
}

func newInstances(p cloud.Provider) *instances {
	return &instances{cloud: p, m: map[cloud.NodeName]cloud.InstanceID{}}
}

func (c *instances) resolve(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	c.mu.Lock()
	id, ok := c.m[node]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := c.cloud.InstanceID(ctx, node)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.m[node] = id
	c.mu.Unlock()
	return id, nil
}

// forget drops node's entry after the cloud said the instance is unknown.
func (c *instances) forget(node cloud.NodeName, err error) {
	if cloud.Classify(err) != cloud.KindNotFound {
		return
	}
	c.mu.Lock()
	delete(c.m, node)
	c.mu.Unlock()
}
