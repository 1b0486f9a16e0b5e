package volume

import (
	"fmt"
	"time"

	"github.com/tether/tether/cloud"
)

// Force-detach reasons.
const (
	ForceTimeout      = "timeout"
	ForceOutOfService = "out-of-service"
)

// reconcile starts the operations the state calls for: detaches first (they
// free an exclusive volume for its next node), then attaches in the order
// the nodes were desired.
func (v *Volume) reconcile(now time.Time) []Effect {
	if !v.restored {
		return nil
	}
	var effs []Effect
	for _, n := range v.att.nodes() {
		effs = append(effs, v.checkPrepare(now, n)...)
	}
	for _, n := range v.att.nodes() {
		effs = append(effs, v.maybeDetach(now, n)...)
	}
	for _, n := range v.desired {
		effs = append(effs, v.maybeAttach(now, n)...)
	}
	return effs
}

func (v *Volume) maybeDetach(now time.Time, n NodeName) []Effect {
	a := v.att.get(n)
	if v.isDesired(n) {
		a.DetachRequested = time.Time{}
		return nil
	}
	if a.DetachRequested.IsZero() {
		a.DetachRequested = now
	}
	if a.op != 0 || !v.canStart(n) || now.Before(a.Fence) || v.cfg.BreakNeverDetach {
		return nil
	}
	if ok, at := v.ready(now, n, opDetach); !ok {
		return []Effect{WakeAt{At: at}}
	}
	force, ok, wake := v.detachAllowed(now, n, a)
	if !ok {
		if wake.IsZero() {
			return nil
		}
		return []Effect{WakeAt{At: wake}}
	}
	v.nextOp++
	a.op = v.opBase + v.nextOp
	a.prev, a.prepared, a.force = a.State, false, force
	v.set(a, Detaching, now)
	effs := []Effect{PrepareDetach{Node: n, Op: a.op, Force: force}, WakeAt{At: now.Add(v.cfg.PrepareTimeout)}}
	if force != "" {
		effs = append(effs, Record{Type: EventForceDetach, Node: n, Warning: true,
			Message: fmt.Sprintf("force detaching volume %q from node %q, still in use there (reason: %s)", v.id, n, force)})
	}
	return effs
}

// detachAllowed applies I2: a volume in use on a node is detached only if
// the node is out of service, or (force detach enabled) the node has been
// NotReady and the detach requested for at least MaxWaitForUnmount. When
// waiting on that deadline it returns it as wake.
func (v *Volume) detachAllowed(now time.Time, n NodeName, a *Attachment) (force string, ok bool, wake time.Time) {
	info := v.nodes.get(n)
	switch {
	case !info.InUse || v.cfg.BreakIgnoreInUse:
		return "", true, time.Time{}
	case info.OutOfService:
		return ForceOutOfService, true, time.Time{}
	case info.Ready || v.cfg.DisableForceDetach:
		return "", false, time.Time{}
	}
	since := a.DetachRequested
	if info.NotReadySince.After(since) {
		since = info.NotReadySince
	}
	deadline := since.Add(v.cfg.MaxWaitForUnmount)
	if now.Before(deadline) {
		return "", false, deadline
	}
	return ForceTimeout, true, time.Time{}
}

func (v *Volume) maybeAttach(now time.Time, n NodeName) []Effect {
	a := v.att.get(n)
	if a != nil && (a.State != Uncertain || now.Before(a.Fence)) {
		return nil
	}
	if !v.canStart(n) {
		return nil
	}
	if v.mode == cloud.Exclusive && !v.cfg.BreakMultiAttach {
		if other, busy := v.attachedElsewhere(n); busy {
			if v.multiAttach[n] {
				return nil
			}
			if v.multiAttach == nil {
				v.multiAttach = map[NodeName]bool{}
			}
			v.multiAttach[n] = true
			return []Effect{Record{Type: EventMultiAttach, Node: n, Warning: true,
				Message: fmt.Sprintf("Multi-Attach error for volume %q: volume is already exclusively attached to node %q and can only be attached to one node at a time; not attaching to %q", v.id, other, n)}}
		}
	}
	if ok, at := v.ready(now, n, opAttach); !ok {
		return []Effect{WakeAt{At: at}}
	}
	if a == nil {
		a = &Attachment{}
		v.att.put(n, a)
	}
	v.nextOp++
	a.op = v.opBase + v.nextOp
	v.set(a, Attaching, now)
	return []Effect{CallAttach{Node: n, Op: a.op}}
}

// canStart: one operation at a time for the whole volume when exclusive,
// one per node when multi-node.
func (v *Volume) canStart(n NodeName) bool {
	exclusive := v.mode == cloud.Exclusive && !v.cfg.BreakMultiAttach
	for _, na := range v.att {
		m, a := na.node, na.a
		if a.op != 0 && (m == n || exclusive) {
			return false
		}
	}
	return true
}

// attachedElsewhere reports a node other than n holding an attachment in
// any state (an Uncertain one may be real: I1 errs on the safe side).
func (v *Volume) attachedElsewhere(n NodeName) (NodeName, bool) {
	for _, na := range v.att { // in node order
		if na.node != n {
			return na.node, true
		}
	}
	return "", false
}

// checkPrepare fails a PrepareDetach that got no answer in PrepareTimeout
// and keeps asking to be woken for it while it waits; it also lifts a
// rebuild fence once it has passed (the Uncertain attachment is then
// resolved by an idempotent attach or detach, as any other).
func (v *Volume) checkPrepare(now time.Time, n NodeName) []Effect {
	a := v.att.get(n)
	if !a.Fence.IsZero() {
		if now.Before(a.Fence) {
			return []Effect{WakeAt{At: a.Fence}}
		}
		a.Fence = time.Time{}
	}
	if a.State == Attached && !a.unacked.IsZero() && a.op == 0 {
		if due := a.unacked.Add(v.cfg.PrepareTimeout); now.Before(due) {
			return []Effect{WakeAt{At: due}}
		}
		return []Effect{v.reportAttached(now, n, a)}
	}
	if a.State != Detaching || a.prepared || a.op == 0 {
		return nil
	}
	if deadline := a.Since.Add(v.cfg.PrepareTimeout); now.Before(deadline) {
		return []Effect{WakeAt{At: deadline}}
	}
	return v.onDetachPrepared(now, DetachPrepared{Node: n, Op: a.op, Msg: "node actor did not answer in " + v.cfg.PrepareTimeout.String()})
}
