package controller

import (
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

func (r *rig) live(vol cloud.VolumeID) bool {
	return r.ctl.env.guard.Exists(volumePrefix + string(vol))
}

// TestSettledVolumesPassivateAndWake: attached, idle volumes stop their
// actors after PassivateAfter; a question or a change wakes the volume,
// which rebuilds from the store and the cloud (no attach again) and acts;
// one with work (a detach waiting for an unmount) stays.
func TestSettledVolumesPassivateAndWake(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) {
		c.PassivateAfter = time.Minute
		c.Node.NotReadyAfter = 24 * time.Hour
	})
	r.node("n1", "n2")
	for _, v := range []cloud.VolumeID{"v1", "v2", "v3"} {
		r.volume(v, cloud.Exclusive)
	}
	r.workload("w1", "n1", "v1")
	r.workload("w2", "n1", "v2")
	r.workload("w3", "n1", "v3")
	r.eventually("attached", func() bool { return r.allSettled([]cloud.VolumeID{"v1", "v2", "v3"}, "n1") })
	r.inUse("n1", "v1", "v2", "v3")
	must(t, r.ctl.DeleteWorkload("w3")) // v3 waits, in use: work to do, no passivation
	r.eventually("v3 waiting to detach", func() bool { return r.volState("v3", "n1") == "Attached" && len(r.ctl.env.guard.HeldNames()) == 0 })

	r.eventually("v1 and v2 passivated", func() bool {
		r.clk.Advance(time.Minute)
		return !r.live("v1") && !r.live("v2")
	})
	if !r.live("v3") {
		t.Fatal("v3, waiting for an unmount, passivated")
	}
	if got := r.ctl.LiveVolumeActors(); got != 1 {
		t.Fatalf("LiveVolumeActors = %d, want 1 (v3)", got)
	}

	// A question about a dormant volume is answered from the store,
	// waking nothing.
	if got := r.volState("v1", "n1"); got != "Attached" || r.live("v1") {
		t.Fatalf("dormant v1: state %q on n1, live %v; want Attached, answered without waking", got, r.live("v1"))
	}
	// A message wakes it; a question it gets while rebuilding is answered
	// once rebuilt.
	r.ctl.env.guard.Send(r.pid(volumePrefix+"v1"), &messages.Wake{})
	if got := r.volState("v1", "n1"); got != "Attached" || !r.live("v1") {
		t.Fatalf("woken v1: state %q on n1, live %v; want Attached and live", got, r.live("v1"))
	}
	// Its timer is armed after it answered: advance until it fires.
	r.eventually("v1 passivated again", func() bool {
		r.clk.Advance(time.Minute)
		return !r.live("v1")
	})

	// A move wakes v2 (the desired state changed): it detaches once
	// unused and attaches on n2.
	r.workload("w2", "n2", "v2")
	r.inUse("n1", "v1")
	r.eventually("v2 moved to n2", r.settled("v2", "n2"))
	r.inUse("n1")
	r.eventually("v3 detached once unused", r.settled("v3"))
	if got := r.cloud.Calls().Calls[sim.MethodAttach]; got != 4 {
		t.Fatalf("%d attach calls, want 4 (three volumes, one move): a woken volume attached again", got)
	}
	if got := detaches(r); got != 2 {
		t.Fatalf("%d detach calls, want 2", got)
	}
}
