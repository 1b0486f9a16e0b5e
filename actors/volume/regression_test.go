package volume

import (
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// Regression (found in review): a multi-node volume starts PrepareDetach on n1 while n2's attach
// is backing off. coalesceWakes keeps only the earliest WakeAt (n2's
// backoff), and checkPrepare never re-emits the PrepareTimeout deadline, so
// once n2's wake has fired nothing ever asks for a Tick at the prepare
// deadline: if the node actor never answers (the very case PrepareTimeout
// exists for), n1 stays Detaching forever.
func TestRegressionPrepareTimeoutWakeIsLost(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(restored(cloud.MultiNode, "n1 n2"), "attach n1", "attach n2")
	h.step(h.attached("n1"))
	h.expect(h.attachFailed("n2", cloud.KindRetryable), "event FailedAttachVolume n2", "wake +500ms")

	// n1 is no longer wanted: prepare starts, its 30 s deadline is dropped.
	deadline := h.now.Add(DefaultConfig().PrepareTimeout)
	var wakes []time.Time
	collect := func(ev Event) {
		for _, e := range h.v.Step(h.now, ev) {
			switch e := e.(type) {
			case WakeAt:
				wakes = append(wakes, e.At)
			case PrepareDetach:
				h.ops[e.Node] = e.Op
			case CallAttach:
				h.ops[e.Node] = e.Op
			}
		}
	}
	collect(DesiredChanged{Mode: cloud.MultiNode, Desired: nodes("n2")})
	h.wantState("n1", "Detaching")
	// The shell's single timer fires at n2's backoff; n2 attaches.
	h.advance(500 * time.Millisecond)
	collect(Tick{})
	collect(h.attached("n2"))
	// The node actor never answers PrepareDetach. Did the core ever ask to
	// be woken at (or after) the prepare deadline?
	asked := false
	for _, w := range wakes {
		if !w.Before(deadline) {
			asked = true
		}
	}
	if !asked {
		var s []string
		for _, w := range wakes {
			s = append(s, "+"+w.Sub(t0).String())
		}
		t.Fatalf("n1 is Detaching with an unanswered PrepareDetach, but the only wakes ever requested were [%s], all before the prepare deadline +30s: nothing will ever Tick the volume again, n1 stays Detaching forever", strings.Join(s, " "))
	}
}

// Regression (found in review): the node reports the volume in use after PrepareDetach was sent
// but before it was answered (the node actor handles InUseReported, then
// DetachRequested; the volume actor receives NodeChanged{InUse}, then
// DetachPrepared{OK}). onDetachPrepared re-checks desire but not I2, so a
// volume the node now reports mounted on a Ready node is detached.
func TestRegressionInUseBeforePrepareAnswerStillDetaches(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(NodeChanged{Node: "n1", Info: ready(false)}, "wake +30s")
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "prepare n1", "wake +30s")
	h.expect(NodeChanged{Node: "n1", Info: ready(true)}, "wake +30s") // in use, Ready, not out of service
	got := h.step(h.prepared("n1"))
	for _, e := range got {
		if strings.HasPrefix(e, "detach n1") {
			t.Fatalf("I2: volume in use on Ready node n1 detached: effects %q", got)
		}
	}
}

// Regression (found in review): truth older than a completed detach resurrects the attachment.
// A sync pass reads VolumesAttached after PrepareDetach removed the volume
// but queries the cloud before the detach lands, so it reports the volume
// as an unknown attachment (Attached=true, AsOf before the detach). The
// stale-truth check only applies while an Attachment exists; after
// DetachDone deleted it, the stale finding creates a phantom Attached,
// reports it in the node's VolumesAttached (the node may mount a detached
// volume, I3), records a DanglingAttachment and detaches again.
func TestRegressionStaleVerifiedAfterDetachResurrects(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.advance(time.Second)
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "prepare n1", "wake +29s")
	h.expect(h.prepared("n1"), "detach n1")
	asOf := h.now.Add(100 * time.Millisecond) // the sync's cloud query, before the detach lands
	h.advance(time.Second)
	h.expect(h.detached("n1"), "report-detached n1", "event SuccessfulDetachVolume n1")
	got := h.step(Verified{Node: "n1", Attached: true, DevicePath: "/dev/xn1", AsOf: asOf})
	if len(got) != 0 {
		t.Fatalf("truth as of %s, older than the detach done at %s, acted on: %q (state %s)", asOf.Sub(t0), h.now.Sub(t0), got, h.state("n1"))
	}
}

// Found by the simulation (bootstrap/verify/simulation,
// TestRegressionStaleDeviceAfterRestart): a node status listed a volume at
// a device the volume
// had lost (a ReportDetached whose write failed after the instance was
// rebooted); the volume's controller restarted while its attach to that
// node was in flight. The rebuilt volume kept the listing, Attached at the
// old device, while the attach landed at another one: the agent could
// never stage it, and nothing compared the paths.
func TestStaleListingIsCorrected(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		ev    Event
		want  []string
		state string // of n1 after ev
	}{
		{
			// The listing predates a loss of the attachment; an attach of
			// the earlier incarnation may land at another device: the
			// listing cannot be trusted until that attach's outcome is
			// known.
			name: "listed, attach in flight: unlisted and fenced",
			ev: Restored{Mode: cloud.Exclusive, Desired: nodes("n1"), Listed: map[NodeName]string{"n1": "/dev/old"},
				InFlight: []InFlight{{Node: "n1", Deadline: t0.Add(time.Minute)}},
				Truth:    map[NodeName]bool{"n1": false}, AsOf: t0},
			want:  []string{"report-detached n1", "wake +1m0s"},
			state: "Uncertain",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig())
			if tc.setup != nil {
				tc.setup(h)
			}
			h.expect(tc.ev, tc.want...)
			h.wantState("n1", tc.state)
		})
	}
	// After the fence, an idempotent attach learns the device.
	h := newHarness(t, DefaultConfig())
	h.step(Restored{Mode: cloud.Exclusive, Desired: nodes("n1"), Listed: map[NodeName]string{"n1": "/dev/old"},
		InFlight: []InFlight{{Node: "n1", Deadline: t0.Add(time.Minute)}}, Truth: map[NodeName]bool{"n1": false}, AsOf: t0})
	h.advance(time.Minute)
	h.expect(Tick{}, "attach n1")
	h.expect(h.attached("n1"), "report-attached n1 /dev/xn1", "event SuccessfulAttachVolume n1", "wake +30s")
}
