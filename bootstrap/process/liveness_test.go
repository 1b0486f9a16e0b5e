package process

import (
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

// slowListing is a store whose Volumes listing takes delay once armed, as
// listing 100,000 volumes from a slow disk does at a controller's start.
type slowListing struct {
	store.Store
	delay atomic.Int64
}

func (s *slowListing) Volumes() ([]store.VolumeSpec, error) {
	time.Sleep(time.Duration(s.delay.Load())) // the injected slowness, not a wait for anything
	return s.Store.Volumes()
}

// A process whose controller start takes several NotReadyAfter periods
// (bulk work: a huge store to list) marks no node NotReady: heartbeats count
// from the moment the agents, which start after the controller, can reach
// it, not from when its node actors spawned.
func TestSlowStartMarksNoNodeNotReady(t *testing.T) {
	const notReadyAfter = time.Second
	dir := t.TempDir()
	start := func(delay time.Duration) *Embedded {
		slow := &slowListing{} // one per start: actors of a stopped one may still read theirs
		slow.delay.Store(int64(delay))
		cfg := DefaultConfig()
		cfg.DataDir, cfg.Nodes, cfg.Durable = dir, 2, true
		cfg.LogOutput, cfg.LogLevel = io.Discard, "warn"
		cfg.Controller.Node.NotReadyAfter = notReadyAfter
		cfg.Agent.HeartbeatEvery = notReadyAfter / 10
		cfg.WrapStore = func(s store.Store) store.Store { slow.Store = s; return slow }
		useSymlinks(t, &cfg)
		e, err := StartEmbedded(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	ready := func(e *Embedded) func() bool {
		return func() bool {
			for _, n := range e.NodeNames {
				st, err := e.Ctl().NodeStatus(n, time.Second)
				if err != nil || !st.Ready {
					return false
				}
			}
			return true
		}
	}
	e := start(0)
	e.Cloud.CreateVolume("v1", cloud.Exclusive)
	if _, err := e.Ctl().ApplyAll([]controller.Change{
		{Volume: &store.VolumeSpec{ID: "v1", Mode: cloud.Exclusive}},
		{Workload: &store.Workload{UID: "w1", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}},
	}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, ready(e), "both nodes Ready")
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	e = start(3 * notReadyAfter)
	defer func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if took := time.Since(began); took < 3*notReadyAfter {
		t.Fatalf("the start took %s: the slow listing was not used", took)
	}
	done := time.Now()
	heard := func() bool {
		for _, n := range e.NodeNames {
			st, err := e.Ctl().NodeStatus(n, time.Second)
			if err != nil || time.Unix(0, st.LastHeartbeatUnixNano).Before(done) {
				return false
			}
		}
		return true
	}
	// Every node has heard its agent after the start: a NotReady
	// transition, had there been one, came before and is recorded.
	testkit.Eventually(t, 20*time.Second, heard, "heartbeats heard by the new controller")
	for _, n := range e.NodeNames {
		for _, ev := range e.Events.For(events.Ref{Kind: events.KindNode, Name: string(n)}) {
			if ev.Type == "NodeNotReady" {
				t.Errorf("a start that took %s marked node %s NotReady: %s", done.Sub(began), n, ev.Message)
			}
		}
	}
}
