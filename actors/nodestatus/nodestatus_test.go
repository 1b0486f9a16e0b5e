package nodestatus

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func sortedVolumes[T any](m map[cloud.VolumeID]T) []cloud.VolumeID {
	return slices.Sorted(maps.Keys(m))
}

// render shows effs, each Persist with the status to write: the node's
// status after the step.
func render(n *Node, now time.Time, effs []Effect) []string {
	var out []string
	for _, e := range effs {
		switch e := e.(type) {
		case Persist:
			st, det := n.View(), ""
			if len(st.VolumesDetaching) > 0 {
				det = fmt.Sprintf(" detaching=%v", sortedVolumes(st.VolumesDetaching))
			}
			if st.InstanceID != "" {
				det += fmt.Sprintf(" instance=%s max=%d", st.InstanceID, st.MaxVolumes)
			}
			out = append(out, fmt.Sprintf("persist attached=%v inuse=%v ready=%v oos=%v%s",
				sortedVolumes(st.VolumesAttached), sortedVolumes(st.VolumesInUse), st.Ready, st.OutOfService, det))
		case PrepareAnswer:
			out = append(out, fmt.Sprintf("answer %s ok=%v", e.Volume, e.OK))
		case NotifyVolume:
			out = append(out, fmt.Sprintf("notify %s inuse=%v ready=%v oos=%v", e.Volume, e.Info.InUse, e.Info.Ready, e.Info.OutOfService))
		case WakeAt:
			out = append(out, fmt.Sprintf("wake +%s", e.At.Sub(now)))
		}
	}
	return out
}

type step struct {
	advance time.Duration
	ev      Event
	want    []string
}

func run(t *testing.T, n *Node, steps []step) {
	t.Helper()
	now := t0
	for i, s := range steps {
		now = now.Add(s.advance)
		got := render(n, now, n.Step(now, s.ev))
		if !slices.Equal(got, s.want) {
			t.Fatalf("step %d (%T%+v):\n got  %q\n want %q", i, s.ev, s.ev, got, s.want)
		}
	}
}

func TestStatusRules(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"attach then detach persists before answering (I4)", []step{
			{0, Restored{Found: true, Status: Status{Ready: true}}, []string{"wake +40s"}},
			{0, Persisted{}, nil},
			{0, VolumeAttached{Volume: "v1", DevicePath: "/dev/a"}, []string{"persist attached=[v1] inuse=[] ready=true oos=false"}},
			{0, Persisted{}, nil},
			{0, VolumeAttached{Volume: "v1", DevicePath: "/dev/a"}, nil},
			{0, DetachRequested{Volume: "v1", Op: 1}, []string{"persist attached=[] inuse=[] ready=true oos=false detaching=[v1]", "answer v1 ok=true"}},
			{0, Persisted{}, nil},
			{0, DetachRequested{Volume: "v1", Op: 1}, []string{"persist attached=[] inuse=[] ready=true oos=false detaching=[v1]", "answer v1 ok=true"}},
			{0, Persisted{}, nil},
			{0, VolumeDetached{Volume: "v1"}, []string{"persist attached=[] inuse=[] ready=true oos=false"}},
			{0, Persisted{}, nil},
			{0, VolumeDetached{Volume: "v1"}, nil},
		}},
		{"a prepare of a volume already detaching still rests on a write (I4, fenced in a cluster)", []step{
			{0, Restored{Found: true, Status: Status{VolumesDetaching: map[cloud.VolumeID]bool{"v1": true}, Ready: true}}, []string{"wake +40s"}},
			// A newer activation of this node may have it attached again:
			// only the (fenced) write tells this one it still owns the node.
			{0, DetachRequested{Volume: "v1", Op: 3}, []string{"persist attached=[] inuse=[] ready=true oos=false detaching=[v1]", "answer v1 ok=true"}},
			{0, PersistFailed{Msg: "fenced"}, []string{"answer v1 ok=false"}},
		}},
		{"a new node is NotReady until its agent first reports", []step{
			{0, Restored{}, []string{"persist attached=[] inuse=[] ready=false oos=false", "wake +40s"}},
			{0, Persisted{}, nil},
			{40 * time.Second, Tick{}, nil},
			{time.Hour, Tick{}, nil},
			{0, HeartbeatReceived{}, []string{"persist attached=[] inuse=[] ready=true oos=false", "wake +40s"}},
			{0, Persisted{}, nil},
			{40 * time.Second, Tick{}, []string{"persist attached=[] inuse=[] ready=false oos=false"}},
		}},
		{"failed persist refuses the detach and restores the status", []step{
			{0, Restored{Found: true, Status: Status{VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"}, Ready: true}}, []string{"wake +40s"}},
			{0, DetachRequested{Volume: "v1", Op: 9}, []string{"persist attached=[] inuse=[] ready=true oos=false detaching=[v1]", "answer v1 ok=true"}},
			{0, PersistFailed{Msg: "disk"}, []string{"answer v1 ok=false"}},
			{0, DetachRequested{Volume: "v1", Op: 10}, []string{"persist attached=[] inuse=[] ready=true oos=false detaching=[v1]", "answer v1 ok=true"}},
			{0, Persisted{}, nil},
			{0, VolumeAttached{Volume: "v1", DevicePath: "/dev/a"}, []string{"persist attached=[v1] inuse=[] ready=true oos=false"}},
		}},
		{"a volume in use is not prepared for detach unless forced (I2)", []step{
			{0, Restored{Found: true, Status: Status{VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"}, VolumesInUse: map[cloud.VolumeID]bool{"v1": true}, Ready: true}}, []string{"wake +40s"}},
			{0, DetachRequested{Volume: "v1", Op: 1}, []string{"answer v1 ok=false"}},
			{0, DetachRequested{Volume: "v1", Op: 2, Force: "out-of-service"}, []string{"persist attached=[] inuse=[v1] ready=true oos=false detaching=[v1]", "answer v1 ok=true"}},
		}},
		{"in-use changes notify only the changed volumes", []step{
			{0, Restored{Found: true, Status: Status{Ready: true}}, []string{"wake +40s"}},
			{0, InUseReported{Volumes: []cloud.VolumeID{"v1", "v2"}}, []string{"persist attached=[] inuse=[v1 v2] ready=true oos=false", "notify v1 inuse=true ready=true oos=false", "notify v2 inuse=true ready=true oos=false"}},
			{0, InUseReported{Volumes: []cloud.VolumeID{"v2", "v1"}}, nil},
			{0, InUseReported{Volumes: []cloud.VolumeID{"v2"}}, []string{"persist attached=[] inuse=[v2] ready=true oos=false", "notify v1 inuse=false ready=true oos=false"}},
		}},
		{"an agent's reported instance is recorded once, and again when it changes", []step{
			{0, Restored{Found: true, Status: Status{Ready: true}}, []string{"wake +40s"}},
			{0, HeartbeatReceived{InstanceID: "node-a", MaxVolumes: 8}, []string{"persist attached=[] inuse=[] ready=true oos=false instance=node-a max=8", "wake +40s"}},
			{0, Persisted{}, nil},
			{time.Second, HeartbeatReceived{InstanceID: "node-a", MaxVolumes: 8}, []string{"wake +40s"}},
			{time.Second, HeartbeatReceived{}, []string{"wake +40s"}}, // the controller's own hello names none
			{time.Second, HeartbeatReceived{InstanceID: "node-b", MaxVolumes: 8}, []string{"persist attached=[] inuse=[] ready=true oos=false instance=node-b max=8", "wake +40s"}},
			{0, PersistFailed{Msg: "disk"}, nil},
			{time.Second, HeartbeatReceived{InstanceID: "node-b", MaxVolumes: 8}, []string{"persist attached=[] inuse=[] ready=true oos=false instance=node-b max=8", "wake +40s"}},
		}},
		{"missed heartbeats make the node NotReady; a heartbeat makes it Ready", []step{
			{0, Restored{Found: true, Status: Status{Ready: true}}, []string{"wake +40s"}},
			{0, InUseReported{Volumes: []cloud.VolumeID{"v1"}}, []string{"persist attached=[] inuse=[v1] ready=true oos=false", "notify v1 inuse=true ready=true oos=false"}},
			{10 * time.Second, HeartbeatReceived{}, []string{"wake +40s"}},
			{39 * time.Second, Tick{}, []string{"wake +1s"}},
			{time.Second, Tick{}, []string{"persist attached=[] inuse=[v1] ready=false oos=false", "notify v1 inuse=true ready=false oos=false"}},
			{time.Minute, Tick{}, nil},
			{0, HeartbeatReceived{}, []string{"persist attached=[] inuse=[v1] ready=true oos=false", "notify v1 inuse=true ready=true oos=false", "wake +40s"}},
		}},
		{"a NotReady transition whose write failed is tried again", []step{
			{0, Restored{Found: true, Status: Status{Ready: true}}, []string{"wake +40s"}},
			{0, Persisted{}, nil},
			{40 * time.Second, Tick{}, []string{"persist attached=[] inuse=[] ready=false oos=false"}},
			{0, PersistFailed{Msg: "disk"}, []string{"wake +1s"}},
			{time.Second, Tick{}, []string{"persist attached=[] inuse=[] ready=false oos=false"}},
			{0, Persisted{}, nil},
		}},
		{"out of service notifies attached and in-use volumes", []step{
			{0, Restored{Found: true, Status: Status{VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"}, VolumesInUse: map[cloud.VolumeID]bool{"v2": true}, Ready: true}}, []string{"wake +40s"}},
			{0, OutOfServiceSet{OutOfService: true}, []string{"persist attached=[v1] inuse=[v2] ready=true oos=true", "notify v1 inuse=false ready=true oos=true", "notify v2 inuse=true ready=true oos=true"}},
			{0, OutOfServiceSet{OutOfService: true}, nil},
		}},
		{"a resync tells every attached and in-use volume again, writing nothing", []step{
			{0, Restored{Found: true, Status: Status{VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"}, VolumesInUse: map[cloud.VolumeID]bool{"v2": true}, Ready: true}}, []string{"wake +40s"}},
			{0, Resynced{}, []string{"notify v1 inuse=false ready=true oos=false", "notify v2 inuse=true ready=true oos=false"}},
			{0, InUseReported{Volumes: nil}, []string{"persist attached=[v1] inuse=[] ready=true oos=false", "notify v2 inuse=false ready=true oos=false"}},
			{0, Resynced{}, []string{"notify v1 inuse=false ready=true oos=false"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { run(t, New("n1", DefaultConfig()), tt.steps) })
	}
}

func TestNotReadySinceIsHeartbeatExpiry(t *testing.T) {
	n := New("n1", DefaultConfig())
	n.Step(t0, Restored{Found: true, Status: Status{Ready: true}})
	n.Step(t0.Add(5*time.Minute), Tick{})
	if got, want := n.Status().NotReadySince, t0.Add(40*time.Second); !got.Equal(want) {
		t.Fatalf("NotReadySince = %v, want %v", got, want)
	}
}

func TestNewNodeNotReadySinceCreation(t *testing.T) {
	n := New("n1", DefaultConfig())
	n.Step(t0, Restored{})
	if st := n.Status(); st.Ready || !st.NotReadySince.Equal(t0) {
		t.Fatalf("a node no agent has reported for: Ready=%v NotReadySince=%v, want NotReady since %v", st.Ready, st.NotReadySince, t0)
	}
}
