package reconciler

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Calls past their deadline, and calls left running by an earlier
// incarnation, are "stuck": the shell cannot interrupt a mount(2) or
// umount(2) on a hung filesystem, so the call may still land. Until it
// returns, its volume is operated on by nobody (two calls on one path at
// once could each undo the other), its mount is Uncertain (so the volume
// stays in VolumesInUse: a hung unmount may yet leave it mounted) and every
// other volume proceeds. When it returns, whatever its result, the mount
// stays Uncertain and the next operation, idempotent (I7), settles it.

// overdue fails every operation past its deadline, moving it to stuck, and
// asks to be woken at the earliest deadline still ahead.
func (a *Agent) overdue(now time.Time) []Effect {
	if a.cfg.OpTimeout <= 0 {
		return nil
	}
	// Most steps find nothing overdue: the earliest deadline, with no
	// sorting and one WakeAt (the step keeps only the earliest anyway).
	var wake time.Time
	due := false
	for _, in := range a.busy {
		deadline := in.started.Add(a.cfg.OpTimeout)
		if !now.Before(deadline) {
			due = true
			break
		}
		if wake.IsZero() || deadline.Before(wake) {
			wake = deadline
		}
	}
	if !due {
		if wake.IsZero() {
			return nil
		}
		return []Effect{WakeAt{At: wake}}
	}
	var effs []Effect
	for _, v := range sortedVols(a.busy) {
		in := a.busy[v]
		deadline := in.started.Add(a.cfg.OpTimeout)
		if now.Before(deadline) {
			effs = append(effs, WakeAt{At: deadline})
			continue
		}
		a.busy = without(a.busy, v)
		a.stuck = with(a.stuck, v, in)
		a.uncertain(v, in)
		msg := fmt.Sprintf("timed out after %s, still running: volume %q is not operated on again before it returns", a.cfg.OpTimeout, v)
		effs = append(effs, a.failed(now, opKey{v, in.uid, in.kind}, msg, false)...)
	}
	return effs
}

// restoreRunning takes over the calls an earlier incarnation left running:
// their volumes wait for them, whatever the scan saw.
func (a *Agent) restoreRunning(now time.Time, running map[VolumeID]Running) []Effect {
	var effs []Effect
	for _, v := range sortedVols(running) {
		r := running[v]
		in := inflight{op: r.Op, kind: r.Kind, uid: r.UID, started: r.Since}
		a.stuck = with(a.stuck, v, in)
		a.uncertain(v, in)
		effs = append(effs, Record{Type: failedType(r.Kind), Workload: r.UID, Volume: v, Warning: true,
			Message: fmt.Sprintf("%s of volume %q, started %s ago by an earlier incarnation, still running: volume %q is not operated on again before it returns", r.Kind, v, now.Sub(r.Since), v)})
	}
	return effs
}

// onStuckReturned frees the volume of a stuck call that has returned.
func (a *Agent) onStuckReturned(now time.Time, e OpDone, in inflight) []Effect {
	a.stuck = without(a.stuck, e.Volume)
	result := "succeeded"
	if e.Err != "" {
		result = "failed: " + e.Err
	}
	return []Effect{Record{Type: EventOpReturned, Workload: in.uid, Volume: e.Volume, Warning: e.Err != "",
		Message: fmt.Sprintf("%s of volume %q returned %s after it started and %s; volume %q is operated on again", in.kind, e.Volume, now.Sub(in.started), result, e.Volume)}}
}

// uncertain marks the mount a call works on as Uncertain.
func (a *Agent) uncertain(v VolumeID, in inflight) {
	if in.kind == OpStage || in.kind == OpUnstage {
		a.mounts.setStage(v, Uncertain)
		return
	}
	a.mounts.setPub(PubKey{in.uid, v}, Uncertain)
}

func failedType(k OpKind) string {
	if k == OpUnstage || k == OpUnpublish {
		return EventFailedUnmount
	}
	return EventFailedMount
}

func hungRecord(v VolumeID, uid, what string) Record {
	return Record{Type: EventFailedMount, Workload: uid, Volume: v, Warning: true,
		Message: fmt.Sprintf("reconstruction: the %s of volume %q did not answer in time (a hung mount?): treated as half-done", what, v)}
}

func sortedPubs[T any](m map[PubKey]T) []PubKey {
	out := make([]PubKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(x, y PubKey) int {
		if c := strings.Compare(string(x.Volume), string(y.Volume)); c != 0 {
			return c
		}
		return strings.Compare(x.UID, y.UID)
	})
	return out
}
