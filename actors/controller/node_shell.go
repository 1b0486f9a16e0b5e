package controller

import (
	"fmt"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// nodeShell is the NodeHost of one incarnation of a node actor:
// Proto.Actor sends, the controller's clock, timer, store and events.
type nodeShell struct{ a *nodeActor }

var _ NodeHost = nodeShell{}

func (s nodeShell) Now() time.Time { return s.a.env.clock.Now() }

func (s nodeShell) SendVolume(v cloud.VolumeID, msg any) {
	e := s.a.env
	e.guard.Send(e.lookup.Volume(v), msg)
}

// SendAgent: in distributed mode an agent not heard from yet gets nothing;
// it gets everything when it announces itself.
func (s nodeShell) SendAgent(msg any) {
	if pid := s.a.env.agentFor(s.a.name); pid != nil {
		s.a.env.guard.Send(pid, msg)
	}
}

func (s nodeShell) QueueFlush() { s.a.env.sys.Root.Send(s.a.self, flushStatus{}) }

func (s nodeShell) WakeAt(at time.Time) { s.a.timer.wakeAt(s.a.env, s.a.self, at) }

func (s nodeShell) PutStatus(st nodestatus.Status, epoch uint64) error {
	return s.a.env.store.PutNodeStatusAt(st, epoch)
}

func (s nodeShell) Fenced(err error) {
	a := s.a
	a.env.log.WithField("node", a.name).Warnf("stopping a stale activation: %v", err)
	a.env.sys.Root.Stop(a.self)
}

func (s nodeShell) Record(typ string, warning bool, msg string) {
	s.a.env.record(s.a.ref, typ, string(s.a.name), warning, msg)
}

// ReadyChanged records NodeReady or NodeNotReady, and warns the node's
// workloads of the latter (node_ready.go).
func (s nodeShell) ReadyChanged(ready bool) {
	a := s.a
	if ready {
		a.env.record(a.ref, "NodeReady", string(a.name), false, fmt.Sprintf("node %q is Ready", a.name))
		return
	}
	a.env.record(a.ref, "NodeNotReady", string(a.name), true, a.notReadyMessage())
	a.told = true
	a.warnWorkloads()
}

func (s nodeShell) Prefetch(vols []cloud.VolumeID) {
	names := make([]string, len(vols))
	for i, v := range vols {
		names[i] = volumePrefix + string(v)
	}
	s.a.env.lookup.prefetch(names)
}
