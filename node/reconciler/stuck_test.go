package reconciler

import (
	"slices"
	"testing"
	"time"
)

const opTimeout = 10 * time.Second

func newTimedHarness(t *testing.T) *harness {
	h := newHarness(t)
	cfg := DefaultConfig()
	cfg.OpTimeout = opTimeout
	h.a = New(cfg, 0)
	return h
}

func (h *harness) mountState(v VolumeID, uid string) MountState {
	for _, m := range h.a.Status().Mounts {
		if m.Volume == v && m.UID == uid {
			return m.State
		}
	}
	return 0
}

// A stage that hangs past its deadline fails (FailedMount, backoff) while
// another volume mounts; its volume is not staged again, even after the
// backoff, until the hung call returns; then it is retried.
func TestHungStageHoldsOnlyItsVolume(t *testing.T) {
	h := newTimedHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1"), wl("w2", "v2")}}, "in-use [v1 v2]", "wake +2m3s")
	h.expect(h.status(vols("v1", "v2"), "v1", "v2"), "stage v1 /dev/v1", "stage v2 /dev/v2", "wake +10s")
	h.expect(h.done("v2"), "publish v2 w2 ro=false", "wake +10s")
	h.expect(h.done("v2"), "event SuccessfulMountVolume w2 v2", "wake +10s")
	hung := h.done("v1")

	h.now = h.now.Add(opTimeout)
	h.expect(Tick{}, "event FailedMount  v1", "event FailedMount w1 v1", "wake +1m53s")
	if got := h.mountState("v1", ""); got != Uncertain {
		t.Fatalf("timed-out stage is %s, want Uncertain", got)
	}
	h.now = h.now.Add(time.Minute) // the backoff (500 ms) is long over
	h.expect(Tick{}, "wake +53s")
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1"), wl("w2", "v2")}}, "wake +53s")
	if st := h.a.Status(); !slices.Equal(st.InUse, vols("v1", "v2")) {
		t.Fatalf("in use %v while the stage of v1 may still land", st.InUse)
	}

	h.expect(hung, "event VolumeOperationReturned  v1", "stage v1 /dev/v1", "wake +10s")
	h.expect(h.done("v1"), "publish v1 w1 ro=false", "wake +10s")
	h.expect(h.done("v1"), "event SuccessfulMountVolume w1 v1")
}

// A hung unpublish keeps its volume in VolumesInUse (it may still be
// mounted) and blocks nothing else; once it returns (even failed), the
// unmount is retried.
func TestHungUnpublishKeepsVolumeInUse(t *testing.T) {
	h := newTimedHarness(t)
	h.expect(Restored{Stages: map[VolumeID]Found{"v1": {Mounted: true}}, Publishes: map[PubKey]Found{{"w1", "v1"}: {Mounted: true}}},
		"event Reconstructed  ")
	h.expect(DesiredChanged{Workloads: []Workload{wl("w2", "v2")}}, "in-use [v1 v2]", "wake +2m3s")
	h.expect(h.status(vols("v1", "v2"), "v1", "v2"), "unpublish v1 w1", "stage v2 /dev/v2", "wake +10s")
	hung := h.done("v1")
	h.expect(h.done("v2"), "publish v2 w2 ro=false", "wake +10s")
	h.expect(h.done("v2"), "event SuccessfulMountVolume w2 v2", "wake +10s")
	h.now = h.now.Add(opTimeout)
	h.expect(Tick{}, "event FailedUnmount w1 v1")
	h.now = h.now.Add(time.Minute)
	h.expect(Tick{})
	if st := h.a.Status(); !slices.Equal(st.InUse, vols("v1", "v2")) {
		t.Fatalf("in use %v, want v1 kept while its unpublish hangs", st.InUse)
	}
	hung.Err = "device busy"
	h.expect(hung, "event VolumeOperationReturned w1 v1", "unpublish v1 w1", "wake +10s")
	h.expect(h.done("v1"), "unstage v1", "wake +10s")
	h.expect(h.done("v1"), "in-use [v2]")
}

// Calls an earlier incarnation left running hold their volumes whatever
// the scan saw (even a volume it did not see at all); a hung inspection is
// reported; other volumes proceed.
func TestRestoredRunningCallsHoldTheirVolumes(t *testing.T) {
	h := newTimedHarness(t)
	h.now = t0.Add(time.Minute)
	h.expect(Restored{
		Stages:    map[VolumeID]Found{"v1": {Mounted: true}, "v4": {Hung: true}},
		Publishes: map[PubKey]Found{{"w1", "v1"}: {}},
		Running: map[VolumeID]Running{
			"v1": {Op: 7, Kind: OpPublish, UID: "w1", Since: t0},
			"v3": {Op: 8, Kind: OpStage, Since: t0},
		},
	}, "event Reconstructed  ", "event FailedMount  v4", "event FailedMount w1 v1", "event FailedMount  v3")
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1"), wl("w2", "v2")}}, "in-use [v1 v2 v3 v4]", "wake +2m3s")
	h.expect(h.status(vols("v1", "v2", "v3", "v4"), "v1", "v2", "v3", "v4"), "stage v2 /dev/v2", "unstage v4", "wake +10s")
	h.expect(OpDone{Volume: "v3", Op: 8}, "event VolumeOperationReturned  v3", "unstage v3", "wake +10s")
	h.expect(OpDone{Volume: "v1", Op: 99}, "wake +10s") // not the running call: ignored
	h.expect(OpDone{Volume: "v1", Op: 7}, "event VolumeOperationReturned w1 v1", "publish v1 w1 ro=false", "wake +10s")
}

// Without an OpTimeout, nothing times out.
func TestNoOpTimeout(t *testing.T) {
	h := newHarness(t)
	h.expect(Restored{})
	h.expect(DesiredChanged{Workloads: []Workload{wl("w1", "v1")}}, "in-use [v1]", "wake +2m3s")
	h.expect(h.status(vols("v1"), "v1"), "stage v1 /dev/v1", "wake +2m3s")
	h.now = h.now.Add(time.Minute)
	h.expect(Tick{}, "wake +1m3s")
	h.expect(h.done("v1"), "publish v1 w1 ro=false", "wake +1m3s")
}
