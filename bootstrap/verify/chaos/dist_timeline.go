package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/bootstrap/verify/journal"
	"github.com/tether/tether/cloud"
	cloudremote "github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/cloud/sim"
)

// timeline holds the records of a distributed run made in this process,
// each with the time it was made at: the runner's (notes, machines going
// down, mount calls its kills cut short, statuses read after a member's
// kill) and the cloud's changes, from its watch, with the times the cloud
// stamped them with. The other processes' records are in their journals;
// merge puts everything in time order once every journal is complete.
//
// The watch follows the cloud's process: the runner says when it killed
// it (cloudKilled) and when it started it again (cloudStarted, which
// returns once a new watch has its snapshot), so that a watch is never
// missing while the cloud runs and the changes it did not see are only
// those made before the kill.
type timeline struct {
	mu   sync.Mutex
	recs []record
	// up: the cloud's process runs; killed: when the runner last killed
	// it, until a snapshot re-bases the attachments at that time.
	up     bool
	killed time.Time
	// snapshots counts the watches that got their snapshot; changed is
	// closed (and replaced) whenever up or snapshots change.
	snapshots int
	changed   chan struct{}
}

func newTimeline() *timeline { return &timeline{up: true, changed: make(chan struct{})} }

// add records r now (unless it carries its own time).
func (t *timeline) add(r record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.time.IsZero() {
		r.time = time.Now()
	}
	t.recs = append(t.recs, r)
}

func (t *timeline) signalLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// cloudKilled notes that the cloud's process was killed now: every change
// made before is in the state it comes back with.
func (t *timeline) cloudKilled() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.up, t.killed = false, time.Now()
	t.signalLocked()
}

// cloudStarted notes that the cloud's process runs again and waits, up to
// within, for a new watch's snapshot.
func (t *timeline) cloudStarted(within time.Duration) error {
	t.mu.Lock()
	t.up = true
	n := t.snapshots
	t.signalLocked()
	t.mu.Unlock()
	return t.waitSnapshot(n+1, within)
}

// waitSnapshot waits, up to within, until n watches got their snapshot.
func (t *timeline) waitSnapshot(n int, within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		got, ch := t.snapshots, t.changed
		t.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("chaos: no watch of the cloud within %s", within)
		}
	}
}

// waitUp waits until the cloud's process runs; false once ctx is done.
func (t *timeline) waitUp(ctx context.Context) bool {
	for ctx.Err() == nil {
		t.mu.Lock()
		up, ch := t.up, t.changed
		t.mu.Unlock()
		if up {
			return true
		}
		select {
		case <-ctx.Done():
		case <-ch:
		}
	}
	return false
}

// rebase records a new watch's snapshot. It is stamped at the kill that
// ended the last watch, if any: the changes the last watch did not
// deliver happened before it, and an attachment made then may be used at
// once by an agent, before the new watch begins. Else at the snapshot's
// own time (at the latest when it was received).
func (t *timeline) rebase(snap []sim.Change, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.killed.IsZero() {
		at, t.killed = t.killed, time.Time{}
	}
	t.recs = append(t.recs, record{kind: recRebase, time: at, snapshot: snap})
	t.snapshots++
	t.signalLocked()
}

// watch records the cloud's changes until ctx is done: one watch after
// another (a watch ends when the cloud's process does), each on a fresh
// connection made once the cloud runs.
func (t *timeline) watch(ctx context.Context, addr string) {
	for t.waitUp(ctx) {
		c, err := cloudremote.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			continue // Dial waited up to its timeout for the cloud
		}
		var snap []sim.Change
		_ = c.Watch(ctx, func(ev cloudremote.Event) error {
			switch {
			case ev.Snapshot:
				snap = append(snap, ev.Change)
			case ev.Synced:
				at := time.Now()
				if len(snap) > 0 {
					at = snap[0].Time
				}
				t.rebase(snap, at)
			default:
				ch := ev.Change
				t.add(record{kind: recCloud, time: ch.Time, vol: ch.Volume, node: ch.Node, change: ch})
			}
			return nil
		})
		_ = c.Close()
	}
}

// merge returns every record of the run, t's and the journals', in time
// order (records of one source keep their order).
func (t *timeline) merge(journals []string) ([]record, int, error) {
	t.mu.Lock()
	out := slices.Clone(t.recs)
	t.mu.Unlock()
	restarts := 0
	var errs []error
	for _, path := range journals {
		rs, err := journal.Read(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, jr := range rs {
			if jr.Kind == journal.KindRestart {
				restarts++
				continue
			}
			if r, ok := fromJournal(jr); ok {
				out = append(out, r)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].time.Before(out[j].time) })
	return out, restarts, errors.Join(errs...)
}

// fromJournal converts a journal's record into the judge's.
func fromJournal(jr journal.Record) (record, bool) {
	r := record{time: time.Unix(0, jr.Time), node: cloud.NodeName(jr.Node), vol: cloud.VolumeID(jr.Volume),
		op: jr.Op, target: jr.Target, mounted: jr.Mounted, err: jr.Err, epoch: jr.Epoch}
	switch jr.Kind {
	case journal.KindMountStart:
		r.kind = recMountStart
	case journal.KindMountEnd:
		r.kind = recMountEnd
	case journal.KindUnmountStart:
		r.kind, r.text = recNote, fmt.Sprintf("%s on %s started", jr.Op, jr.Node)
	case journal.KindUnmountEnd:
		r.kind = recUnmountEnd
	case journal.KindDevice:
		r.kind, r.text = recDevice, jr.Text
	case journal.KindStatus:
		r.kind = recStatus
		r.status = statusRec{attached: map[cloud.VolumeID]string{}, inUse: map[cloud.VolumeID]bool{}}
		for v, dev := range jr.Attached {
			r.status.attached[cloud.VolumeID(v)] = dev
		}
		for _, v := range jr.InUse {
			r.status.inUse[cloud.VolumeID(v)] = true
		}
	case journal.KindStatusFailed:
		r.kind, r.text = recStatusFailed, jr.Err
	case journal.KindEvent:
		r.kind, r.text = recNote, "event "+jr.Op+" "+jr.Node
		if jr.Op == "ForceDetach" {
			r.kind = recForce
		}
	default:
		return record{}, false
	}
	return r, true
}

// statusOf is what a durable node status says about volumes.
func statusOf(st nodestatus.Status) statusRec {
	out := statusRec{attached: maps.Clone(st.VolumesAttached), inUse: map[cloud.VolumeID]bool{}}
	if out.attached == nil {
		out.attached = map[cloud.VolumeID]string{}
	}
	for v, ok := range st.VolumesInUse {
		if ok {
			out.inUse[v] = true
		}
	}
	return out
}
