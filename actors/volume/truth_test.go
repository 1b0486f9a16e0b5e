package volume

import (
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// I4: the status is persisted before the detach; a failed persist means no
// detach, and the attachment stays reported.
func TestPrepareBeforeDetachAndFailedPrepare(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "prepare n1", "wake +30s")
	h.wantState("n1", "Detaching")
	h.expect(DetachPrepared{Node: "n1", Op: h.ops["n1"], OK: false, Msg: "disk full"}, "event FailedDetachVolume n1", "report-attached n1 /dev/xn1", "wake +500ms")
	h.wantState("n1", "Attached")
	h.advance(500 * time.Millisecond)
	h.expect(Tick{}, "prepare n1", "wake +29.5s")
	h.expect(h.prepared("n1"), "detach n1")
	h.expect(h.prepared("n1")) // a duplicate answer starts nothing
}

func TestPrepareWithoutAnswerTimesOut(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "prepare n1", "wake +30s")
	h.advance(30 * time.Second)
	h.expect(Tick{}, "event FailedDetachVolume n1", "report-attached n1 /dev/xn1", "wake +500ms")
	h.wantState("n1", "Attached")
	h.advance(500 * time.Millisecond)
	h.expect(Tick{}, "prepare n1", "wake +29.5s")
}

func TestWantedAgainWhilePreparing(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "prepare n1", "wake +30s")
	h.expect(DesiredChanged{Mode: cloud.Exclusive, Desired: nodes("n1")}, "wake +30s")
	h.expect(h.prepared("n1"), "report-attached n1 /dev/xn1", "wake +30s")
	h.wantState("n1", "Attached")
}

// I6: a failed detach leaves the attachment Uncertain (not reported) and is
// retried after the backoff.
func TestFailedDetachIsUncertain(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(DesiredChanged{Mode: cloud.Exclusive}, "prepare n1", "wake +30s")
	h.expect(h.prepared("n1"), "detach n1")
	h.expect(DetachDone{Node: "n1", Op: h.ops["n1"], Err: cloud.KindRetryable, Msg: "boom"}, "event FailedDetachVolume n1", "wake +500ms")
	h.wantState("n1", "Uncertain")
	h.advance(500 * time.Millisecond)
	h.expect(Tick{}, "prepare n1", "wake +30s")
	h.expect(h.prepared("n1"), "detach n1")
	// Not found: the volume is not attached there; done (I7).
	h.expect(DetachDone{Node: "n1", Op: h.ops["n1"], Err: cloud.KindNotFound}, "report-detached n1", "event SuccessfulDetachVolume n1")
	h.wantState("n1", "none")
}

func TestAttachmentLostIsHealed(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.advance(time.Second)
	h.expect(Verified{Node: "n1", Attached: true, AsOf: h.now}, "report-attached n1 /dev/xn1", "wake +30s")
	h.expect(Verified{Node: "n1", Attached: false, AsOf: h.now},
		"report-detached n1", "event AttachmentLost n1", "attach n1")
	// Truth about a node with an operation in flight is ignored.
	h.expect(Verified{Node: "n1", Attached: false, AsOf: h.now})
	h.wantState("n1", "Attaching")
	h.advance(time.Second)
	h.expect(h.attached("n1"), "report-attached n1 /dev/xn1", "event SuccessfulAttachVolume n1", "wake +30s")
	// Truth asked before the attach finished is stale.
	h.expect(Verified{Node: "n1", Attached: false, AsOf: h.now.Add(-time.Millisecond)}, "wake +30s")
	h.wantState("n1", "Attached")
}

func TestDanglingAttachmentIsDetached(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(restored(cloud.Exclusive, ""))
	h.expect(Verified{Node: "n9", Attached: true, DevicePath: "/dev/d", AsOf: h.now},
		"report-attached n9 /dev/d", "event DanglingAttachment n9", "prepare n9", "wake +30s")
}

func TestUncertainResolvedByTruth(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(restored(cloud.Exclusive, "n1"), "attach n1")
	h.expect(h.attachFailed("n1", cloud.KindRetryable), "event FailedAttachVolume n1", "wake +500ms")
	h.advance(time.Millisecond)
	h.expect(Verified{Node: "n1", Attached: true, DevicePath: "/dev/real", AsOf: h.now}, "report-attached n1 /dev/real", "wake +30s")
	h.wantState("n1", "Attached")
}

func TestRestoredWithTruth(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(Restored{
		Mode:    cloud.Exclusive,
		Desired: nodes("n2"),
		Listed:  map[NodeName]string{"n1": "/dev/a"},
		Nodes:   map[NodeName]NodeInfo{"n1": ready(true)},
		Truth:   map[NodeName]bool{"n1": true, "n2": false},
		AsOf:    h.now,
	}, "report-attached n1 /dev/a", "event Multi-Attach n2", "wake +30s")
	h.wantState("n1", "Attached")
	// The listed attachment the cloud no longer has is dropped, and the
	// desired node gets it.
	h2 := newHarness(t, DefaultConfig())
	h2.expect(Restored{
		Mode:    cloud.Exclusive,
		Desired: nodes("n2"),
		Listed:  map[NodeName]string{"n1": "/dev/a"},
		Truth:   map[NodeName]bool{"n1": false},
		AsOf:    h2.now,
	}, "report-detached n1", "event AttachmentLost n1", "attach n2")
}

// A result of an operation started by an earlier incarnation is not trusted
// blindly: the machine asks the cloud.
func TestResultOfUnknownOperation(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(restored(cloud.Exclusive, ""))
	h.expect(AttachDone{Node: "n1", Op: 7, DevicePath: "/dev/a"}, "verify n1")
	h.expect(DetachDone{Node: "n1", Op: 7}, "verify n1")
}

func TestIdleAfterEverythingDetached(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.MultiNode, "n1 n2")
	if h.v.Idle() {
		t.Fatal("idle while attached")
	}
	h.expect(DesiredChanged{Mode: cloud.MultiNode}, "prepare n1", "prepare n2", "wake +30s")
	h.step(h.prepared("n1"))
	h.step(h.prepared("n2"))
	h.step(h.detached("n1"))
	h.step(h.detached("n2"))
	if !h.v.Idle() {
		t.Fatalf("not idle: %+v", h.v.Status())
	}
}

// A rebuilt machine whose node status says a detach was prepared there
// freezes that node until any call of the earlier incarnation has ended,
// then asks the cloud; it reports nothing attached there meanwhile.
func TestRebuildFencesNodesWithDetachInFlight(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.expect(Restored{
		Mode:      cloud.Exclusive,
		Desired:   nodes("n1"),
		Truth:     map[NodeName]bool{"n1": true}, // the old detach has not landed yet
		Detaching: nodes("n1"),
		AsOf:      h.now,
	}, "report-detached n1", "wake +1m0s")
	h.wantState("n1", "Uncertain")
	h.advance(30 * time.Second)
	h.expect(Verified{Node: "n1", Attached: true, AsOf: h.now}, "wake +30s") // truth from inside the fence does not count
	h.expect(Tick{}, "wake +30s")
	h.advance(30 * time.Second)
	h.expect(Tick{}, "attach n1") // attach is idempotent: it resolves the uncertainty
	h.expect(h.attached("n1"), "report-attached n1 /dev/xn1", "event SuccessfulAttachVolume n1", "wake +30s")
}

// Regression (found by the simulation): a node that failed to record a
// reported attachment does not list it; the volume must not go on
// believing it does, or nothing ever mounts (and, the instance gone, the
// sync sees no difference to correct).
func TestReportFailedReattaches(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.expect(ReportFailed{Node: "n1"}, "attach n1")
	h.expect(h.attached("n1"), "report-attached n1 /dev/xn1", "event SuccessfulAttachVolume n1", "wake +30s")
}

// A controller that died mid re-attach may have recorded the first
// attach's device while the repeated attach got another: the cloud's device
// is the truth, and the node is told it so the agent mounts the right one.
func TestVerifiedAtAnotherDeviceIsAdopted(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.attachedOn(cloud.Exclusive, "n1")
	h.advance(time.Second)
	h.expect(Verified{Node: "n1", Attached: true, DevicePath: "/dev/new", AsOf: h.now}, "report-attached n1 /dev/new", "wake +30s")
	h.wantState("n1", "Attached")
	// A later report without a device keeps the adopted one.
	h.advance(time.Second)
	h.expect(Verified{Node: "n1", Attached: true, AsOf: h.now}, "report-attached n1 /dev/new", "wake +30s")
}
