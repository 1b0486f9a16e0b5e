package reconciler

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	t   *testing.T
	a   *Agent
	now time.Time
	ops map[VolumeID]uint64
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, a: New(DefaultConfig(), 0), now: t0, ops: map[VolumeID]uint64{}}
}

func (h *harness) expect(ev Event, want ...string) {
	h.t.Helper()
	var got []string
	for _, e := range h.a.Step(h.now, ev) {
		got = append(got, h.render(e))
	}
	if !slices.Equal(got, want) {
		h.t.Fatalf("at +%s after %T%+v:\n got  %q\n want %q", h.now.Sub(t0), ev, ev, got, want)
	}
}

func (h *harness) render(e Effect) string {
	switch e := e.(type) {
	case ReportInUse:
		return fmt.Sprintf("in-use %v", e.Volumes)
	case Stage:
		h.ops[e.Volume] = e.Op
		return fmt.Sprintf("stage %s %s", e.Volume, e.Device)
	case Unstage:
		h.ops[e.Volume] = e.Op
		return "unstage " + string(e.Volume)
	case Publish:
		h.ops[e.Volume] = e.Op
		return fmt.Sprintf("publish %s %s ro=%v", e.Volume, e.UID, e.ReadOnly)
	case Unpublish:
		h.ops[e.Volume] = e.Op
		return fmt.Sprintf("unpublish %s %s", e.Volume, e.UID)
	case Record:
		return fmt.Sprintf("event %s %s %s", e.Type, e.Workload, e.Volume)
	case WakeAt:
		return fmt.Sprintf("wake +%s", e.At.Sub(h.now))
	}
	h.t.Fatalf("unknown effect %T", e)
	return ""
}

func (h *harness) done(v VolumeID) OpDone { return OpDone{Volume: v, Op: h.ops[v]} }
func (h *harness) fail(v VolumeID) OpDone { return OpDone{Volume: v, Op: h.ops[v], Err: "boom"} }

func wl(uid string, vols ...VolumeID) Workload {
	w := Workload{UID: uid}
	for _, v := range vols {
		w.Volumes = append(w.Volumes, Use{Volume: v})
	}
	return w
}

// status is what the controller would push after applying the agent's
// latest report (it echoes its number).
func (h *harness) status(inUse []VolumeID, attached ...VolumeID) StatusChanged {
	s := StatusChanged{Attached: map[VolumeID]string{}, InUse: map[VolumeID]bool{}, InUseSeq: h.a.Status().Seq}
	for _, v := range attached {
		s.Attached[v] = "/dev/" + string(v)
	}
	for _, v := range inUse {
		s.InUse[v] = true
	}
	return s
}

func vols(v ...VolumeID) []VolumeID { return v }

// I3: report in use first; mount only once the controller has echoed the
// report AND lists the volume attached.
func TestMountOnlyAfterInUseAndAttached(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1")}}, "in-use [v1]", "wake +2m3s")
	h.expect(h.status(nil), "wake +2m3s")                                  // status known, nothing in it
	h.expect(h.status(nil, "v1"), "wake +2m3s")                            // attached, but our report not heard yet
	h.expect(h.status(vols("v1")), "wake +2m3s")                           // heard, not attached yet
	h.expect(h.status(vols("v1"), "v1"), "stage v1 /dev/v1", "wake +2m3s") // both
	h.expect(h.done("v1"), "publish v1 w1 ro=false", "wake +2m3s")
	h.expect(h.done("v1"), "event SuccessfulMountVolume w1 v1")
	h.expect(Tick{})
}

// Unmount before leaving VolumesInUse: unpublish, unstage, then report.
func TestUnmountBeforeLeavingInUse(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1")}}, "in-use [v1]", "wake +2m3s")
	h.expect(h.status(vols("v1"), "v1"), "stage v1 /dev/v1", "wake +2m3s")
	h.expect(h.done("v1"), "publish v1 w1 ro=false", "wake +2m3s")
	h.expect(h.done("v1"), "event SuccessfulMountVolume w1 v1")
	h.expect(DesiredChanged{}, "unpublish v1 w1")
	h.expect(h.done("v1"), "unstage v1")
	h.expect(h.done("v1"), "in-use []")
}

// Two workloads share a volume: one stage, two publishes, unstage after the
// last one leaves.
func TestSharedVolumeRefCounted(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{Workloads: []Workload{wl("a", "v1"), {UID: "b", Volumes: []Use{{Volume: "v1", ReadOnly: true}}}}}, "in-use [v1]", "wake +2m3s")
	h.expect(h.status(vols("v1"), "v1"), "stage v1 /dev/v1", "wake +2m3s")
	h.expect(h.done("v1"), "publish v1 a ro=false", "wake +2m3s")
	h.expect(h.done("v1"), "event SuccessfulMountVolume a v1", "publish v1 b ro=true", "wake +2m3s")
	h.expect(h.done("v1"), "event SuccessfulMountVolume b v1")
	h.expect(DesiredChanged{Workloads: []Workload{wl("b", "v1")}}, "unpublish v1 a")
	h.expect(h.done("v1")) // b still uses it: no unstage
	h.expect(DesiredChanged{}, "unpublish v1 b")
	h.expect(h.done("v1"), "unstage v1")
	h.expect(h.done("v1"), "in-use []")
}

func TestVolumesProceedInParallelAndFailuresBackOff(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1", "v2")}}, "in-use [v1 v2]", "wake +2m3s")
	h.expect(h.status(vols("v1", "v2"), "v1", "v2"), "stage v1 /dev/v1", "stage v2 /dev/v2", "wake +2m3s")
	h.expect(h.fail("v1"), "event FailedMount  v1", "event FailedMount w1 v1", "wake +500ms")
	h.expect(h.done("v2"), "publish v2 w1 ro=false", "wake +500ms")
	h.now = h.now.Add(500 * time.Millisecond)
	h.expect(Tick{}, "stage v1 /dev/v1", "wake +2m2.5s")
}

// After a restart: working mounts are kept without remounting, half-done
// ones are completed when wanted and rolled back when not, orphans are
// unmounted; nothing happens before desired state and status are known.
func TestReconstruction(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{
		Stages:    map[VolumeID]Found{"kept": {Mounted: true}, "half": {Mounted: true}, "orphan": {Mounted: true}, "partial": {}},
		Publishes: map[PubKey]Found{{"w1", "kept"}: {Mounted: true}, {"w1", "half"}: {}, {"gone", "orphan"}: {Mounted: true}},
	}, "event Reconstructed  ")
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "kept", "half")}}, "in-use [half kept orphan partial]", "wake +2m3s")
	h.expect(h.status(vols("kept", "half", "orphan", "partial"), "kept", "half", "orphan", "partial"), "publish half w1 ro=false", "unpublish orphan gone", "unstage partial", "wake +2m3s")
	h.expect(h.done("orphan"), "unstage orphan", "wake +2m3s")
	h.expect(h.done("partial"), "in-use [half kept orphan]", "wake +2m3s")
	h.expect(h.done("orphan"), "in-use [half kept]", "wake +2m3s")
	h.expect(h.done("half"), "event SuccessfulMountVolume w1 half")
}

func TestWaitForAttachTimeoutNamesVolumes(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1", "v2")}}, "in-use [v1 v2]", "wake +2m3s")
	h.expect(h.status(vols("v1"), "v1"), "stage v1 /dev/v1", "wake +2m3s")
	h.expect(h.done("v1"), "publish v1 w1 ro=false", "wake +2m3s")
	h.expect(h.done("v1"), "event SuccessfulMountVolume w1 v1", "wake +2m3s")
	h.now = h.now.Add(2*time.Minute + 3*time.Second)
	h.expect(Tick{}, "event WaitForAttachTimeout w1 ")
	h.expect(Tick{}) // once
}

func TestStaleResultIgnored(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{}, "in-use []")
	h.expect(OpDone{Volume: "v9", Op: 42})
}

// Regression (found by chaos): a status pushed before the controller heard
// our latest VolumesInUse report must not let us mount: it may show the
// volume in use from an older report, after which we reported it unused
// and the controller was free to detach it.
func TestStaleStatusDoesNotAllowMount(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1")}}, "in-use [v1]", "wake +2m3s")
	stale := h.status(vols("v1"), "v1") // answers report 1
	h.expect(DesiredChanged{}, "in-use []")
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1")}}, "in-use [v1]", "wake +2m3s") // report 3
	h.expect(stale, "wake +2m3s")                                                                // says in use, but answers report 1
	h.expect(h.status(vols("v1"), "v1"), "stage v1 /dev/v1", "wake +2m3s")                       // answers report 3
}

// Regression (found by chaos): operation numbers start afresh in every
// incarnation only if the shell gives a new base; a result of an earlier
// incarnation's operation must not complete this one's (it once let an
// agent drop a volume from VolumesInUse while it was still staged).
func TestEarlierIncarnationResultIgnored(t *testing.T) {
	old := New(DefaultConfig(), 1<<32)
	h := newHarness(t)
	h.a = New(DefaultConfig(), 2<<32)
	for _, a := range []*Agent{old, h.a} {
		a.Step(t0, Restored{Stages: map[VolumeID]Found{"v1": {Mounted: true}}, Publishes: map[PubKey]Found{{"w1", "v1"}: {Mounted: true}}})
	}
	// The earlier incarnation started its unpublish too, then died.
	old.Step(t0, DesiredChanged{})
	var staleOp uint64
	for _, e := range old.Step(t0, StatusChanged{Attached: map[VolumeID]string{"v1": "/dev/v1"}, InUse: map[VolumeID]bool{"v1": true}, InUseSeq: old.Status().Seq}) {
		if u, ok := e.(Unpublish); ok {
			staleOp = u.Op
		}
	}
	h.expect(DesiredChanged{}, "in-use [v1]")
	h.expect(h.status(vols("v1"), "v1"), "unpublish v1 w1")
	// Its result arrives now: it must not complete this incarnation's.
	h.expect(OpDone{Volume: "v1", Op: staleOp})
	h.expect(h.done("v1"), "unstage v1")
	h.expect(h.done("v1"), "in-use []")
}

// A stage that fails tells every workload waiting for the volume; one
// that fails for good (a CSI plugin's INVALID_ARGUMENT) waits the
// backoff's cap instead of retrying in half a second, and says so.
func TestStageFailureTellsEveryWaitingWorkload(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{Workloads: []Workload{wl("a", "v1"), wl("b", "v1")}}, "in-use [v1]", "wake +2m3s")
	h.expect(h.status(vols("v1"), "v1"), "stage v1 /dev/v1", "wake +2m3s")
	h.expect(OpDone{Volume: "v1", Op: h.ops["v1"], Err: "InvalidArgument: no such share", Terminal: true},
		"event FailedMount  v1", "event FailedMount a v1", "event FailedMount b v1", "wake +2m2s")
	h.now = h.now.Add(time.Minute)
	h.expect(Tick{}, "wake +1m2s") // no hot loop: still waiting for the cap
	h.now = h.now.Add(62 * time.Second)
	h.expect(Tick{}, "stage v1 /dev/v1", "wake +1s")
}

// The TEST-ONLY BreakStaleStatus hook acts on the VolumesAttached of the
// status before the last: a withdrawn listing still stages.
func TestBreakStaleStatusActsOnAWithdrawnListing(t *testing.T) {
	h := newHarness(t)
	h.a = New(Config{WaitForAttachAndMount: DefaultConfig().WaitForAttachAndMount, Backoff: DefaultConfig().Backoff, BreakStaleStatus: true}, 0)
	h.expect(Restored{})
	h.expect(h.status(nil, "v1")) // attached, nobody wants it
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1")}}, "in-use [v1]", "wake +2m3s")
	h.expect(h.status(vols("v1")), "stage v1 /dev/v1", "wake +2m3s") // withdrawn, yet it stages
}
