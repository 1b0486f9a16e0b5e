package process

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/mount"
)

// Data integrity end to end on the loop cloud: files written through a
// workload's mount on one node, synced, read back on another node after a
// fault, every checksum equal, the disk formatted once (its ext4 UUID
// unchanged).

const (
	files = 24 // about 12 MiB of a 32 MiB disk
	vol   = cloud.VolumeID("data")
	uid   = "app"
)

// applyOn puts the workload on node n (creating the volume first).
func applyOn(t *testing.T, e *Embedded, n cloud.NodeName) {
	t.Helper()
	if _, _, ok := e.Account.Volume(vol); !ok {
		if err := e.Account.CreateVolume(vol, cloud.Exclusive); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Ctl().ApplyAll([]controller.Change{
		{Volume: &store.VolumeSpec{ID: vol, Mode: cloud.Exclusive}},
		{Workload: &store.Workload{UID: uid, Node: n, Volumes: []cloud.VolumeID{vol}}},
	}); err != nil {
		t.Fatal(err)
	}
}

// powerOff takes node n down as chaos.PowerOff does: its agent stops and
// every mount it had vanishes, as in a reboot.
func powerOff(t *testing.T, e *Embedded, n cloud.NodeName) {
	t.Helper()
	if err := e.StopAgent(n); err != nil {
		t.Fatal(err)
	}
	m, err := e.Mounter(n)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Reboot(e.NodeDir(n), m); err != nil {
		t.Fatal(err)
	}
}

// (a) A's machine goes down and its instance is terminated (the cloud
// detaches the disk); the workload moves to B: every file is there.
func TestLoopDataSurvivesTerminateAndMove(t *testing.T) {
	e := startLoop(t, loopConfig(t, newLoopDir(t)))
	applyOn(t, e, "n1")
	sums := writeChecksummed(t, waitServed(t, e, "n1", uid, vol), files)
	uuid := fsUUID(t, e, vol)

	powerOff(t, e, "n1")
	inst, _ := e.Account.InstanceOf("n1")
	if err := e.Account.Terminate(inst); err != nil {
		t.Fatal(err)
	}
	applyOn(t, e, "n2")
	verifyChecksums(t, waitServed(t, e, "n2", uid, vol), sums)
	if got := fsUUID(t, e, vol); got != uuid {
		t.Errorf("the disk was formatted again: ext4 UUID %s, was %s", got, uuid)
	}
}

// (a') A's instance is terminated while A's agent runs and has the disk
// mounted: the kernel keeps A's loop device bound until A unmounts, so B,
// given a device of the same image, must not mount it before (two ext4
// mounts of one disk corrupt it): its stage fails with ErrImageShared
// until A has let go. Then every file is there.
func TestLoopTerminateWhileMountedWaitsForUnmount(t *testing.T) {
	e := startLoop(t, loopConfig(t, newLoopDir(t)))
	applyOn(t, e, "n1")
	p1 := waitServed(t, e, "n1", uid, vol)
	sums := writeChecksummed(t, p1, files)
	var shared atomic.Int32
	e.Events.Subscribe(func(ev events.Event) {
		if ev.Type == "FailedMount" && ev.Node == "n2" && strings.Contains(ev.Message, agent.ErrImageShared.Error()) {
			shared.Add(1)
		}
	})
	// A holds the disk busy until B has been refused at least once.
	hold := holdOpen(t, p1+"/file-000")
	inst, _ := e.Account.InstanceOf("n1")
	if err := e.Account.Terminate(inst); err != nil {
		t.Fatal(err)
	}
	applyOn(t, e, "n2")
	testkit.Eventually(t, 60*time.Second, func() bool { return shared.Load() > 0 }, "n2's stage refused while n1 still has the disk mounted")
	if !mountedOn(e, "n1", p1) {
		t.Fatalf("%s was unmounted while a process held it", p1)
	}
	hold()
	verifyChecksums(t, waitServed(t, e, "n2", uid, vol), sums)
}

// gate blocks the first Stage of vol on a node until released.
type gate struct {
	mount.Mounter
	once     sync.Once
	blocked  chan struct{} // closed when the Stage is held
	release  chan struct{}
	inFlight atomic.Int32 // Stages of vol running now
	overlap  atomic.Bool  // two ran at once
}

func (g *gate) Stage(source, target string) error {
	if n := g.inFlight.Add(1); n > 1 {
		g.overlap.Store(true)
	}
	defer g.inFlight.Add(-1)
	g.once.Do(func() {
		close(g.blocked)
		<-g.release
	})
	return g.Mounter.Stage(source, target)
}

// (b) B's agent stops (as a crash would) while its stage of the moved disk
// is held in the middle, and starts again: the new agent leaves the disk
// alone while its predecessor's call runs (never two stages at once),
// takes it over when it returns, and every file is there.
func TestLoopDataSurvivesAgentStopMidStage(t *testing.T) {
	cfg := loopConfig(t, newLoopDir(t))
	g := &gate{blocked: make(chan struct{}), release: make(chan struct{})}
	cfg.WrapMounter = func(n cloud.NodeName, m mount.Mounter) mount.Mounter {
		if n != "n2" {
			return m
		}
		g.Mounter = m
		return g
	}
	e := startLoop(t, cfg)
	released := false
	t.Cleanup(func() {
		if !released {
			close(g.release)
		}
	})
	applyOn(t, e, "n1")
	sums := writeChecksummed(t, waitServed(t, e, "n1", uid, vol), files)
	uuid := fsUUID(t, e, vol)

	applyOn(t, e, "n2")
	select {
	case <-g.blocked:
	case <-time.After(60 * time.Second):
		t.Fatal("n2 never staged the disk")
	}
	if err := e.StopAgent("n2"); err != nil {
		t.Fatal(err)
	}
	if err := e.StartAgent("n2"); err != nil {
		t.Fatal(err)
	}
	// The new agent is up and sees the call of its predecessor running.
	testkit.Eventually(t, 30*time.Second, func() bool {
		a, ok := e.Agents["n2"]
		if !ok {
			return false
		}
		st, err := a.Status(time.Second)
		return err == nil && st.Ready
	}, "n2's new agent ready")
	close(g.release)
	released = true
	verifyChecksums(t, waitServed(t, e, "n2", uid, vol), sums)
	if g.overlap.Load() {
		t.Error("two stages of the disk ran at once on n2")
	}
	if got := fsUUID(t, e, vol); got != uuid {
		t.Errorf("the disk was formatted again: ext4 UUID %s, was %s", got, uuid)
	}
}

// (c) The controller restarts (rebuilt from the store, the agents' reports
// and the cloud) right after the workload was moved: the move completes,
// and every file is there.
func TestLoopDataSurvivesControllerRestart(t *testing.T) {
	e := startLoop(t, loopConfig(t, newLoopDir(t)))
	applyOn(t, e, "n1")
	sums := writeChecksummed(t, waitServed(t, e, "n1", uid, vol), files)
	if err := e.RestartController(); err != nil {
		t.Fatal(err)
	}
	applyOn(t, e, "n2")
	if err := e.RestartController(); err != nil {
		t.Fatal(err)
	}
	verifyChecksums(t, waitServed(t, e, "n2", uid, vol), sums)
	if mountedOn(e, "n1", podPath(t, e, "n1", uid, vol)) {
		t.Error("the disk is still mounted on n1")
	}
}
