package agent

import (
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// agentShell is the Host of one incarnation of the agent actor:
// Proto.Actor sends, the agent's clock and timer, its event recorder and
// log.
type agentShell struct{ a *agentActor }

var _ Host = agentShell{}

func (s agentShell) Now() time.Time { return s.a.cfg.Clock.Now() }

func (s agentShell) SendController(msg any) {
	c := s.a.cfg
	c.Guard.SendFrom(c.Controller(c.Node), msg, s.a.self)
}

func (s agentShell) SendSelf(msg any) { s.a.cfg.Guard.Send(s.a.self, msg) }

func (s agentShell) WakeAt(at time.Time) {
	a := s.a
	if a.wake != nil {
		a.wake.Stop()
	}
	self, g := a.self, a.cfg.Guard
	a.wake = clock.At(a.cfg.Clock, at, func() { g.Send(self, &messages.Wake{}) })
}

func (s agentShell) Record(ev events.Event, vol cloud.VolumeID) {
	c := s.a.cfg
	if c.Events != nil {
		c.Events.Record(ev)
	}
	l := c.Log.WithFields(map[string]any{"node": c.Node, "event": ev.Type, "workload": workloadOf(ev), "volume": vol})
	if ev.Warning {
		l.Warn(ev.Message)
	} else {
		l.Info(ev.Message)
	}
}

// workloadOf names the workload an event is about ("" for the node).
func workloadOf(ev events.Event) string {
	if ev.Object.Kind == events.KindWorkload {
		return ev.Object.Name
	}
	return ""
}
