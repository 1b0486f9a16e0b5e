package nodestatus

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// A failed write gives back the status last persisted, whatever the burst
// changed, and the node keeps one copy of its status at rest.
func TestFailedWriteRestoresThePersistedStatus(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := New("n1", DefaultConfig())
		now := t0
		n.Step(now, Restored{Found: true, Status: Status{Ready: true,
			VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a", "v2": "/dev/b"},
			VolumesInUse:    map[cloud.VolumeID]bool{"v1": true, "v3": false}}})
		saved := n.Status()
		var seq uint64
		vol := func() cloud.VolumeID { return cloud.VolumeID(fmt.Sprintf("v%d", rng.IntN(6))) }
		for step := range 300 {
			now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
			var ev Event
			switch rng.IntN(9) {
			case 0:
				ev = VolumeAttached{Volume: vol(), DevicePath: fmt.Sprintf("/dev/%c", 'a'+rng.IntN(3))}
			case 1:
				ev = VolumeDetached{Volume: vol()}
			case 2:
				ev = DetachRequested{Volume: vol(), Op: uint64(step), Force: []string{"", "oos"}[rng.IntN(2)]}
			case 3:
				var vs []cloud.VolumeID
				for range rng.IntN(4) {
					vs = append(vs, vol())
				}
				seq += uint64(rng.IntN(2))
				ev = InUseReported{Volumes: vs, Seq: seq}
			case 4:
				ev = OutOfServiceSet{OutOfService: rng.IntN(2) == 0}
			case 5:
				ev = HeartbeatReceived{}
			case 6:
				ev = Tick{}
			case 7:
				n.Step(now, Persisted{})
				saved = n.Status()
				if n.undo != nil || n.saved.VolumesAttached != nil || n.saved.VolumesInUse != nil || n.saved.VolumesDetaching != nil {
					t.Fatalf("seed %d step %d: at rest the node holds more than its status: undo %v, saved %+v", seed, step, n.undo, n.saved)
				}
				continue
			case 8:
				n.Step(now, PersistFailed{Msg: "disk"})
				got := n.Status()
				saved.InUseSeq = max(saved.InUseSeq, seq) // the report's number is kept, written or not
				if !reflect.DeepEqual(got, saved) {
					t.Fatalf("seed %d step %d: after a failed write\n got  %+v\n want %+v", seed, step, got, saved)
				}
				continue
			}
			n.Step(now, ev)
		}
	}
}

// An unchanged report, as agents resend them, costs nothing.
func TestUnchangedInUseReportAllocatesNothing(t *testing.T) {
	n := New("n1", DefaultConfig())
	n.Step(t0, Restored{Found: true, Status: Status{Ready: true}})
	var vols []cloud.VolumeID
	for i := range 40 {
		vols = append(vols, cloud.VolumeID(fmt.Sprintf("v%02d", i)))
	}
	n.Step(t0, InUseReported{Volumes: vols, Seq: 1})
	n.Step(t0, Persisted{})
	var again Event = InUseReported{Volumes: vols, Seq: 2}
	if allocs := testing.AllocsPerRun(100, func() {
		if effs := n.Step(t0, again); len(effs) != 0 {
			t.Fatalf("unchanged report: %v", effs)
		}
	}); allocs != 0 {
		t.Errorf("an unchanged report of 40 volumes: %v allocations, want none", allocs)
	}
}
