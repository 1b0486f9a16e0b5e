package chaos

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/bootstrap/verify/journal"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Faults of whole processes: SIGKILLs, restarts, a partition.

// restartAgent stops node n's agent process, by SIGKILL or as an operator
// would, settles the mount calls the stop cut short, and starts it again.
// Its mounts stay.
func (r *distRunner) restartAgent(n cloud.NodeName, sigkill bool) error {
	if r.down[n] || r.cloudDown {
		return nil // nothing runs on a machine that is off; an agent starts only with its cloud
	}
	path := r.f.AgentJournal(n)
	var err error
	if sigkill {
		r.noteAll("agent %s SIGKILLed", n)
		r.kill("agent/sigkill")
		err = r.f.KillAgent(n)
	} else {
		r.noteAll("agent %s restarted", n)
		r.kill("agent-restart")
		err = r.f.StopAgent(n)
	}
	if err != nil {
		return err
	}
	if err := r.settleMounts(n, path); err != nil {
		return err
	}
	r.restarts++
	return r.f.StartAgent(n)
}

// settleMounts records how the mount calls that node n's agent (whose
// journal is path) had in progress when its process ended came out: the
// target of each is inspected at once, by the runner, while no process
// moves it (the agent is gone, the next one not started), as the
// recording mounter inspects a target after a call that failed.
func (r *distRunner) settleMounts(n cloud.NodeName, path string) error {
	if path == "" {
		return nil
	}
	recs, err := journal.Read(path)
	if err != nil {
		return err
	}
	open := map[string]journal.Record{}
	for _, jr := range recs {
		switch jr.Kind {
		case journal.KindMountStart, journal.KindUnmountStart:
			open[jr.Target] = jr
		case journal.KindMountEnd, journal.KindUnmountEnd:
			delete(open, jr.Target)
		}
	}
	if len(open) == 0 {
		return nil
	}
	l, err := layout.New(r.f.NodeDir(n))
	if err != nil {
		return err
	}
	m := mount.NewSymlink(l)
	for _, target := range slices.Sorted(maps.Keys(open)) {
		jr := open[target]
		st, _, ierr := m.Inspect(target)
		rec := record{kind: recMountEnd, node: n, vol: cloud.VolumeID(jr.Volume), op: jr.Op, target: target,
			mounted: ierr != nil || st == mount.Mounted, err: "the agent's process ended during the call"}
		if jr.Kind == journal.KindUnmountStart {
			rec.kind = recUnmountEnd
		}
		r.tl.add(rec)
	}
	return nil
}

// member kills member i (SIGKILL), unless it is the last one running, or
// starts it again.
func (r *distRunner) member(kind string, i int) error {
	if kind == StartMember {
		if !r.dead[i] {
			return nil
		}
		if r.cloudDown || r.cut >= 0 {
			// A member starts only with its cloud, and joins the cluster
			// only once the others can reach it (while one is cut off,
			// a member takes some 30 s to be ready).
			if !slices.Contains(r.later, i) {
				r.later = append(r.later, i)
			}
			return nil
		}
		if err := r.f.StartController(i); err != nil {
			return err
		}
		delete(r.dead, i)
		r.restarts++
		r.noteAll("member %d started again", i)
		if r.faultsOn != (distributed.Faults{}) {
			r.warn(r.f.ControlController(i, r.faultsCommand()))
		}
		return nil
	}
	if r.dead[i] || r.running() <= 1 {
		return nil
	}
	r.noteAll("member %d SIGKILLed", i)
	r.kill("member/sigkill")
	if err := r.f.KillController(i); err != nil {
		return err
	}
	r.dead[i] = true
	r.readStatuses(fmt.Sprintf("read after member %d was SIGKILLed", i))
	return nil
}

// readStatuses records every node status as the store has it now. A
// member killed between a durable write and its record of it took the
// record along: what the store has at this moment is the truth, and the
// timeline must not keep an older one.
func (r *distRunner) readStatuses(why string) {
	var err error
	for range 3 {
		// Stamped before the read: the read shows every write of the
		// killed member, and perhaps a write another member makes
		// meanwhile, which then counts from this stamp, no later than it
		// did.
		at := time.Now()
		sts, rerr := r.store.NodeStatuses()
		if err = rerr; err == nil {
			for _, st := range sts {
				r.tl.add(record{kind: recStatus, time: at, node: st.Name, status: statusOf(st), text: why})
			}
			return
		}
	}
	r.warn(fmt.Errorf("node statuses %s: %w", why, err))
}

// watchReady bounds the wait for a watch of the cloud once it runs.
const watchReady = 20 * time.Second

// startLater starts the members whose start waited.
func (r *distRunner) startLater() error {
	later := r.later
	r.later = nil
	for _, i := range later {
		if err := r.member(StartMember, i); err != nil {
			return err
		}
	}
	return nil
}

// partition cuts member i off (at most one at a time, and never the last
// member running), or heals it.
func (r *distRunner) partition(kind string, i int) error {
	if kind == Heal {
		if r.cut != i {
			return nil
		}
		r.f.Partition(i, false)
		r.cut = -1
		r.noteAll("member %d healed", i)
		return r.startLater()
	}
	if r.cut >= 0 || r.dead[i] || r.running() < 2 {
		return nil
	}
	r.count(Partition)
	r.f.Partition(i, true)
	r.cut = i
	r.noteAll("member %d partitioned", i)
	return nil
}

// cloudProcess kills the cloud's process (SIGKILL) or starts it again.
func (r *distRunner) cloudProcess(kind string) error {
	if kind == StartCloud {
		if !r.cloudDown {
			return nil
		}
		if err := r.f.StartCloud(); err != nil {
			return err
		}
		r.cloudDown = false
		r.restarts++
		r.noteAll("cloud started again")
		if err := r.tl.cloudStarted(watchReady); err != nil {
			return err
		}
		if err := r.dialCloud(); err != nil {
			return err
		}
		return r.startLater()
	}
	if r.cloudDown {
		return nil
	}
	r.noteAll("cloud SIGKILLed")
	r.kill("cloud/sigkill")
	if err := r.f.KillCloud(); err != nil {
		return err
	}
	r.tl.cloudKilled()
	r.cloudDown = true
	return nil
}

func (r *distRunner) restartEtcd() error {
	r.count(RestartEtcd)
	r.noteAll("etcd restarted")
	if err := r.f.Etcd.Stop(); err != nil {
		return err
	}
	return r.f.Etcd.Restart()
}
