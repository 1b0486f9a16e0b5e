package volume

import (
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

func TestNothingBeforeRestored(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(DesiredChanged{Mode: cloud.Exclusive, Desired: nodes("n1")})
	h.expect(Tick{})
	h.expect(restored(cloud.Exclusive, "n1"), "attach n1")
}

func TestSingleAttach(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(restored(cloud.Exclusive, "n1"), "attach n1")
	h.wantState("n1", "Attaching")
	h.expect(Tick{}) // one operation at a time
	h.expect(h.attached("n1"), "report-attached n1 /dev/xn1", "event SuccessfulAttachVolume n1", "wake +30s")
	h.wantState("n1", "Attached")
	h.expect(Tick{}, "wake +30s")
}

func TestExclusiveOnTwoNodes(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(restored(cloud.Exclusive, "n1 n2"), "attach n1")
	// While attaching to n1 nothing else starts, and no event yet: the
	// exclusive volume is busy, not refused.
	h.expect(Tick{})
	h.expect(h.attached("n1"), "report-attached n1 /dev/xn1", "event SuccessfulAttachVolume n1", "event Multi-Attach n2", "wake +30s")
	h.expect(Tick{}, "wake +30s") // Multi-Attach once per volume and node
	h.expect(NodeChanged{Node: "n1", Info: ready(true)}, "wake +30s")
	// The workload leaves n1: detach waits for n1 to stop using it.
	h.expect(DesiredChanged{Mode: cloud.Exclusive, Desired: nodes("n2")}, "wake +30s")
	h.expect(NodeChanged{Node: "n1", Info: ready(false)}, "prepare n1", "wake +30s")
	h.expect(Tick{}, "wake +30s") // no attach to n2 while the detach is in flight
	h.expect(h.prepared("n1"), "detach n1")
	h.expect(h.detached("n1"), "report-detached n1", "event SuccessfulDetachVolume n1", "attach n2")
	h.expect(h.attached("n2"), "report-attached n2 /dev/xn2", "event SuccessfulAttachVolume n2", "wake +30s")
	h.wantState("n1", "none")
}

func TestUncertainElsewhereBlocksExclusiveAttach(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(restored(cloud.Exclusive, "n1 n2"), "attach n1")
	h.expect(h.attachFailed("n1", cloud.KindRetryable), "event FailedAttachVolume n1", "event Multi-Attach n2", "wake +500ms")
	h.wantState("n1", "Uncertain")
	h.advance(500 * time.Millisecond)
	h.expect(Tick{}, "attach n1")
}

func TestMultiNodeOnThreeNodesAtOnce(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(restored(cloud.MultiNode, "n1 n2 n3"), "attach n1", "attach n2", "attach n3")
	h.expect(h.attached("n2"), "report-attached n2 /dev/xn2", "event SuccessfulAttachVolume n2", "wake +30s")
	h.expect(h.attachFailed("n3", cloud.KindThrottled), "event FailedAttachVolume n3", "wake +500ms")
	h.advance(500 * time.Millisecond)
	h.expect(Tick{}, "attach n3", "wake +29.5s")
	h.expect(h.attached("n1"), "report-attached n1 /dev/xn1", "event SuccessfulAttachVolume n1", "wake +29.5s")
	h.expect(h.attached("n3"), "report-attached n3 /dev/xn3", "event SuccessfulAttachVolume n3", "wake +29.5s")
	// Detaching from one node does not block the others.
	h.expect(DesiredChanged{Mode: cloud.MultiNode, Desired: nodes("n1 n3")}, "prepare n2", "wake +29.5s")
	h.expect(DesiredChanged{Mode: cloud.MultiNode, Desired: nodes("n1 n3 n4")}, "attach n4", "wake +30s")
}

func TestDetachWaitsWhileInUse(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(NodeChanged{Node: "n1", Info: ready(true)}, "wake +30s")
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "wake +30s")
	for i := 0; i < 10; i++ {
		h.advance(time.Hour) // a Ready node is never force detached
		h.expect(Tick{}, "report-attached n1 /dev/xn1")
	}
	h.expect(NodeChanged{Node: "n1", Info: ready(false)}, "prepare n1", "wake +30s")
	h.expect(h.prepared("n1"), "detach n1")
}

func TestForceDetachOnlyNotReadyAfterMaxWait(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(NodeChanged{Node: "n1", Info: NodeInfo{InUse: true, NotReadySince: h.now}}, "wake +30s")
	h.advance(time.Minute)
	// Deadline counts from the later of NotReady and the detach request.
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "report-attached n1 /dev/xn1", "wake +6m0s")
	h.advance(6*time.Minute - time.Nanosecond)
	h.expect(Tick{}, "report-attached n1 /dev/xn1", "wake +1ns")
	h.advance(time.Nanosecond)
	h.expect(Tick{}, "prepare n1", "event ForceDetach n1", "wake +29.999999999s")
	h.expect(h.prepared("n1"), "detach n1 force=timeout")
}

func TestForceDetachNeverOnReadyNode(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(NodeChanged{Node: "n1", Info: ready(true)}, "wake +30s")
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "wake +30s")
	h.advance(7 * time.Minute)
	h.expect(Tick{}, "report-attached n1 /dev/xn1")
	// The node goes NotReady only now: the clock starts now.
	h.expect(NodeChanged{Node: "n1", Info: NodeInfo{InUse: true, NotReadySince: h.now}}, "wake +30s")
}

func TestForceDetachDisabled(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DisableForceDetach = true
	h := newHarness(t, cfg)
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(NodeChanged{Node: "n1", Info: NodeInfo{InUse: true, NotReadySince: h.now}}, "wake +30s")
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "wake +30s")
	h.advance(24 * time.Hour)
	h.expect(Tick{}, "report-attached n1 /dev/xn1")
	h.wantState("n1", "Attached")
}

func TestOutOfServiceDetachesAtOnce(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DisableForceDetach = true // out-of-service is not subject to it
	h := newHarness(t, cfg)
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(NodeChanged{Node: "n1", Info: ready(true)}, "wake +30s")
	h.expect(DesiredChanged{Mode: cloud.Exclusive, Desired: nodes("n2")}, "event Multi-Attach n2", "wake +30s")
	h.expect(NodeChanged{Node: "n1", Info: NodeInfo{InUse: true, Ready: true, OutOfService: true}},
		"prepare n1", "event ForceDetach n1", "wake +30s")
	h.expect(h.prepared("n1"), "detach n1 force=out-of-service")
	h.expect(h.detached("n1"), "report-detached n1", "event SuccessfulDetachVolume n1", "attach n2")
}

func TestAttachBackoffDoubles(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(restored(cloud.Exclusive, "n1"), "attach n1")
	waits := []string{"500ms", "1s", "2s", "4s", "8s", "16s", "32s", "1m4s", "2m2s", "2m2s"}
	for _, w := range waits {
		h.expect(h.attachFailed("n1", cloud.KindRetryable), "event FailedAttachVolume n1", "wake +"+w)
		h.wantState("n1", "Uncertain")
		d, _ := time.ParseDuration(w)
		h.advance(d - time.Millisecond)
		h.expect(Tick{}, "wake +1ms")
		h.advance(time.Millisecond)
		h.expect(Tick{}, "attach n1")
	}
	h.expect(h.attached("n1"), "report-attached n1 /dev/xn1", "event SuccessfulAttachVolume n1", "wake +30s")
	// Success resets the backoff: the next failure waits 500 ms again.
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "prepare n1", "wake +30s")
	h.expect(h.prepared("n1"), "detach n1")
	h.expect(h.detached("n1"), "report-detached n1", "event SuccessfulDetachVolume n1")
	h.expect(DesiredChanged{Mode: cloud.Exclusive, Desired: nodes("n1")}, "attach n1")
	h.expect(h.attachFailed("n1", cloud.KindThrottled), "event FailedAttachVolume n1", "wake +500ms")
}

func TestJitterStaysWithinPolicy(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Backoff.Jitter = 0.5
	cfg.Rand = func() float64 { return 0.5 }
	h := newHarness(t, cfg)
	h.expect(restored(cloud.Exclusive, "n1"), "attach n1")
	h.expect(h.attachFailed("n1", cloud.KindRetryable), "event FailedAttachVolume n1", "wake +625ms")
}
