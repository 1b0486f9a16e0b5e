package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// announce is node n's agent announcing itself in incarnation epoch (0: the
// controller's own replay), as agent.Agent does.
func (r *rig) announce(n cloud.NodeName, epoch uint64) {
	r.ctl.env.guard.Send(r.ctl.env.lookup.Node(n), &messages.AgentStarted{Node: string(n), AgentEpoch: epoch})
}

// partialPasses are the partial passes among passes.
func partialPasses(all []*messages.SyncPassFinished) []*messages.SyncPassFinished {
	var out []*messages.SyncPassFinished
	for _, p := range all {
		if p.Partial {
			out = append(out, p)
		}
	}
	return out
}

// An agent that comes back in a new incarnation has its node verified at
// once, in one call, without waiting for the periodic pass: the volumes its
// instance lost are attached again. The first announcement a node actor
// hears, a repeat of the same incarnation and the controller's own replays
// verify nothing.
func TestAgentReturnVerifiesItsNode(t *testing.T) {
	r := newRig(t)
	passes := r.passes()
	r.node("n1", "n2")
	held := []cloud.VolumeID{"a", "b"}
	for i, v := range held {
		r.volume(v, cloud.Exclusive)
		r.workload(fmt.Sprintf("w%d", i), "n1", v)
	}
	r.volume("c", cloud.Exclusive)
	r.workload("wc", "n2", "c")
	r.eventually("attached", func() bool { return r.allSettled(held, "n1") && r.settled("c", "n2")() })

	r.announce("n1", 7) // the first this node actor hears
	// Time passes, less than a sync period: an answer as of now is newer
	// than the attachments it finds lost.
	r.clk.Advance(r.cfg.SyncPeriod / 5)
	inst, _ := r.cloud.InstanceOf("n1")
	must(t, r.cloud.Terminate(inst))
	must(t, r.cloud.Start(inst))
	r.announce("n1", 7) // the same incarnation again
	r.announce("n1", 0) // a replay
	before := r.cloud.Calls()
	r.announce("n1", 8) // the agent came back
	r.eventually("a partial pass", func() bool { return len(partialPasses(passes())) == 1 })
	r.eventually("the lost volumes attached again", func() bool { return r.allSettled(held, "n1") })
	// The clock never moved: no periodic pass ran.
	if got := passes(); len(got) != 1 {
		t.Fatalf("%d passes, want the one partial pass: %v", len(got), got)
	}
	p := passes()[0]
	if p.Nodes != 1 || p.Calls != 1 || p.Lost != 2 {
		t.Fatalf("pass %+v: want 1 node, 1 call, 2 lost", p)
	}
	if got := r.cloud.Calls().Calls[sim.MethodInstanceVolumes] - before.Calls[sim.MethodInstanceVolumes]; got != 1 {
		t.Fatalf("%d InstanceVolumes calls, want 1", got)
	}
	if !r.settled("c", "n2")() {
		t.Fatal("the volume on the other node was disturbed")
	}
}

// Returns heard while a pass is in flight share one partial pass after it,
// in ceil(nodes/batch) calls; a partial pass leaves the periodic timer as
// it was.
func TestAgentReturnsShareOnePass(t *testing.T) {
	r := newRig(t, func(_ *Config, s *sim.Config) { s.BatchSize = 2 })
	passes := r.passes()
	nodes := []cloud.NodeName{"n1", "n2", "n3", "n4", "n5"}
	r.node(nodes...)
	for _, n := range nodes {
		r.announce(n, 1)
	}
	gate := make(chan struct{})
	r.calls.mu.Lock()
	r.calls.listGate = gate
	r.calls.mu.Unlock()
	r.ctl.SyncNow() // a full pass, held at the cloud
	r.eventually("the full pass's calls held", func() bool { return r.calls.listings() == 3 })
	for _, n := range nodes[1:] {
		r.announce(n, 2)
	}
	// A node actor asks the sync actor while it handles the return; a
	// status query answered after it means the ask is in the sync actor's
	// mailbox, ahead of the held calls' answers.
	for _, n := range nodes {
		if _, err := r.ctl.NodeStatus(n, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	r.eventually("the full pass and one partial pass", func() bool { return len(passes()) == 2 })
	all := passes()
	if all[0].Partial || all[0].Nodes != 5 || all[0].Calls != 3 {
		t.Fatalf("first pass %+v: want the full one, 5 nodes in 3 calls", all[0])
	}
	if p := all[1]; !p.Partial || p.Nodes != 4 || p.Calls != 2 {
		t.Fatalf("second pass %+v: want a partial one, 4 nodes in 2 calls", p)
	}
	// The full pass armed the periodic timer; a partial pass half a period
	// later does not move it: one period after the full pass, the next
	// full one starts.
	r.clk.Advance(r.cfg.SyncPeriod / 2)
	r.announce("n1", 2)
	r.eventually("a partial pass over n1", func() bool { return len(passes()) == 3 })
	if p := passes()[2]; !p.Partial || p.Nodes != 1 || p.Calls != 1 {
		t.Fatalf("third pass %+v: want a partial one, 1 node in 1 call", p)
	}
	r.clk.Advance(r.cfg.SyncPeriod - r.cfg.SyncPeriod/2)
	r.eventually("the periodic pass", func() bool { return len(passes()) == 4 })
	if p := passes()[3]; p.Partial || p.Nodes != 5 {
		t.Fatalf("fourth pass %+v: want a full one", p)
	}
}
