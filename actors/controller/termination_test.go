package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// passes counts finished sync passes from the event stream.
func (r *rig) passes() func() []*messages.SyncPassFinished {
	var got []*messages.SyncPassFinished
	sub := r.sys.EventStream.Subscribe(func(ev interface{}) {
		if p, ok := ev.(*messages.SyncPassFinished); ok {
			r.mu.Lock()
			got = append(got, p)
			r.mu.Unlock()
		}
	})
	r.t.Cleanup(func() { r.sys.EventStream.Unsubscribe(sub) })
	return func() []*messages.SyncPassFinished {
		r.mu.Lock()
		defer r.mu.Unlock()
		return append([]*messages.SyncPassFinished(nil), got...)
	}
}

// The problem tether exists for: a terminated node loses its volumes; the
// sync finds out within one period with one cloud call per batch of nodes,
// and when the instance is back the volumes are attached again.
func TestNodeTerminationAndReturn(t *testing.T) {
	for _, batch := range []int{1, 2} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			r := newRig(t, func(_ *Config, s *sim.Config) { s.BatchSize = batch })
			passes := r.passes()
			r.node("n1", "n2", "n3")
			held := []cloud.VolumeID{"a", "b", "c"}
			for i, v := range held {
				r.volume(v, cloud.Exclusive)
				r.workload(fmt.Sprintf("w%d", i), "n1", v)
			}
			r.volume("d", cloud.Exclusive)
			r.workload("wd", "n2", "d")
			r.eventually("attached", func() bool { return r.allSettled(held, "n1") && r.settled("d", "n2")() })

			inst, _ := r.cloud.InstanceOf("n1")
			must(t, r.cloud.Terminate(inst))
			before := r.cloud.Calls()
			r.clk.Advance(r.cfg.SyncPeriod) // one sync period
			r.eventually("one sync pass", func() bool { return len(passes()) == 1 })
			after := r.cloud.Calls()
			wantCalls := (3 + batch - 1) / batch
			if got := after.Calls[sim.MethodInstanceVolumes] - before.Calls[sim.MethodInstanceVolumes]; got != wantCalls {
				t.Fatalf("sync made %d InstanceVolumes calls for 3 nodes in batches of %d, want %d", got, batch, wantCalls)
			}
			if got := after.Calls[sim.MethodVolumesAreAttached] - before.Calls[sim.MethodVolumesAreAttached]; got != 0 {
				t.Fatalf("sync made %d per-volume calls, want 0", got)
			}
			if p := passes()[0]; p.Lost != 3 || p.Nodes != 3 || int(p.Calls) != wantCalls {
				t.Fatalf("pass = %+v, want 3 nodes, 3 lost, %d calls", p, wantCalls)
			}
			for _, v := range held {
				r.eventually("attachment lost recorded", func() bool { return len(r.events(v, "AttachmentLost")) == 1 })
				r.eventually("not reported while not attached", func() bool { return !r.reported("n1", v) })
			}
			if !r.settled("d", "n2")() {
				t.Fatal("volume on the surviving node was disturbed")
			}

			must(t, r.cloud.Start(inst))
			// Attaches tried while the instance was down back off: time
			// passes until every one has been tried again.
			r.advanceUntil("attached again and reported", 500*time.Millisecond, func() bool { return r.allSettled(held, "n1") })
		})
	}
}

// A sync that fails changes nothing.
func TestSyncErrorKeepsBelief(t *testing.T) {
	r := newRig(t)
	passes := r.passes()
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	r.cloud.FailNext(sim.MethodInstanceVolumes, 1, cloud.KindRetryable)
	r.ctl.SyncNow()
	r.eventually("pass done", func() bool { return len(passes()) == 1 })
	if p := passes()[0]; p.Errors != 1 || p.Lost != 0 {
		t.Fatalf("pass = %+v, want 1 error, nothing lost", p)
	}
	if !r.settled("v1", "n1")() {
		t.Fatal("a failed sync changed the attachment")
	}
}

// An attachment nobody asked for (made behind tether's back) is found by
// the sync and detached.
func TestDanglingAttachmentDetached(t *testing.T) {
	r := newRig(t)
	passes := r.passes()
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	inst, _ := r.cloud.InstanceOf("n1")
	if _, err := r.cloud.Attach(t.Context(), "v1", inst); err != nil {
		t.Fatal(err)
	}
	r.ctl.SyncNow()
	r.eventually("pass done", func() bool { return len(passes()) == 1 })
	r.eventually("dangling detached", r.settled("v1"))
	if got := len(r.events("v1", "DanglingAttachment")); got != 1 {
		t.Fatalf("DanglingAttachment events = %d, want 1", got)
	}
}
