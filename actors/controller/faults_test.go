package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

func attaches(r *rig) int { return r.cloud.Calls().Calls[sim.MethodAttach] }

// Cloud errors back off 500 ms, 1 s, 2 s, 4 s: no try before its time, a
// try as soon as it is due.
func TestAttachBacksOffExponentially(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.cloud.FailNext(sim.MethodAttach, 4, cloud.KindRetryable)
	r.workload("w1", "n1", "v1")
	for i, wait := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second} {
		r.eventually(fmt.Sprintf("failure %d recorded", i+1), func() bool { return len(r.events("v1", "FailedAttachVolume")) == i+1 })
		ev := r.events("v1", "FailedAttachVolume")[i]
		if !strings.Contains(ev.Message, fmt.Sprintf("no retry for %s", wait)) {
			t.Fatalf("failure %d: event %q does not announce a %s backoff", i+1, ev.Message, wait)
		}
		if got := r.volState("v1", "n1"); got != "Uncertain" {
			t.Fatalf("failure %d: state %s, want Uncertain (I6)", i+1, got)
		}
		r.clk.Advance(wait - time.Millisecond)
		if got := r.volState("v1", "n1"); got != "Uncertain" || attaches(r) != i+1 {
			t.Fatalf("1 ms before the backoff ends: state %s, %d attach calls; want Uncertain and %d", got, attaches(r), i+1)
		}
		if r.reported("n1", "v1") {
			t.Fatal("an uncertain attachment is reported in VolumesAttached")
		}
		r.clk.Advance(time.Millisecond)
		r.eventually(fmt.Sprintf("retry %d", i+1), func() bool { return attaches(r) == i+2 })
	}
	r.eventually("attached after the errors stop", r.settled("v1", "n1"))
}

// Throttled calls back off like errors: a burst that exceeds the cloud's
// budget is not retried at once, and everything attaches once the budget
// refills.
func TestThrottlingRespected(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	const n = 8
	var vols []cloud.VolumeID
	for i := 0; i < n; i++ {
		v := cloud.VolumeID(fmt.Sprintf("v%d", i))
		vols = append(vols, v)
		r.volume(v, cloud.MultiNode)
	}
	r.cloud.SetThrottle(2, 4) // 2 calls/s, burst 4
	for i, v := range vols {
		r.workload(fmt.Sprintf("w%d", i), "n1", v)
	}
	r.eventually("every volume tried once", func() bool {
		return attaches(r) == n && r.rec.Count("FailedAttachVolume")+r.rec.Count("SuccessfulAttachVolume") == n
	})
	throttled := r.cloud.Calls().Throttled[sim.MethodAttach]
	if throttled == 0 {
		t.Fatal("no attach was throttled: the test does not exercise throttling")
	}
	// No retry before the backoff: time has not moved, nor have the calls.
	for _, v := range vols {
		r.volState(v, "n1") // flush every mailbox
	}
	if got := attaches(r); got != n {
		t.Fatalf("attach calls = %d before any backoff elapsed, want %d", got, n)
	}
	for i := 0; i < 40 && !r.allSettled(vols, "n1"); i++ {
		r.clk.Advance(time.Second)
		// Let the retries this advance started finish before time moves on.
		r.eventually("no attach in flight", func() bool {
			for _, v := range vols {
				if r.volState(v, "n1") == "Attaching" {
					return false
				}
			}
			return true
		})
	}
	r.eventually("all attached despite throttling", func() bool { return r.allSettled(vols, "n1") })
	c := r.cloud.Calls()
	if c.AttachNew != n {
		t.Fatalf("AttachNew = %d, want %d", c.AttachNew, n)
	}
	t.Logf("attach calls %d, throttled %d", c.Calls[sim.MethodAttach], c.Throttled[sim.MethodAttach])
}

func (r *rig) allSettled(vols []cloud.VolumeID, nodes ...cloud.NodeName) bool {
	for _, v := range vols {
		if !r.settled(v, nodes...)() {
			return false
		}
	}
	return true
}
