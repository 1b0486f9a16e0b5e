package volume

import (
	"slices"
	"time"
)

// Rebuilding after a (re)start: the store's snapshot, the start-up verify,
// and the fences that keep this incarnation away from nodes where an
// operation of an earlier one may still land.

func (v *Volume) onRestored(now time.Time, e Restored) []Effect {
	v.restored = true
	v.onDesired(DesiredChanged{Mode: e.Mode, Desired: e.Desired})
	for n, info := range e.Nodes {
		v.setNode(n, info)
	}
	for n, dev := range e.Listed {
		v.att.put(n, &Attachment{State: Attached, DevicePath: dev})
	}
	unsettled := map[NodeName]bool{}
	for _, f := range e.InFlight {
		if !v.settles(e, f, now) {
			unsettled[f.Node] = true
		}
	}
	var effs []Effect
	if e.Truth != nil {
		for _, n := range sortedNodes(e.Truth) {
			if slices.Contains(e.Detaching, n) || unsettled[n] {
				continue // fenced below: this truth may predate the old operation
			}
			effs = append(effs, v.onVerified(now, Verified{Node: n, Attached: e.Truth[n], DevicePath: e.Listed[n], AsOf: e.AsOf})...)
		}
	}
	for _, na := range v.att {
		a := na.a
		a.Since = e.AsOf
	}
	v.floor = e.AsOf
	for _, n := range e.Detaching {
		// Whatever the verify said, an old detach may still land: freeze
		// the node, not reported, until every call of the old incarnation
		// has ended, then ask again.
		effs = append(effs, v.fence(now, n, now.Add(v.cfg.CloudTimeout))...)
	}
	for _, f := range e.InFlight {
		if unsettled[f.Node] {
			effs = append(effs, v.fence(now, f.Node, f.Deadline)...)
		}
	}
	return effs
}

// settles reports whether the start-up verify tells the outcome of an
// earlier incarnation's operation: it was asked after the operation's
// deadline, so the operation had landed or never would. Otherwise the node
// is fenced until the deadline and its attachment stays Uncertain until an
// idempotent attach or detach (or newer truth) resolves it: an attach whose
// reply was lost leaves an attachment that no node status lists, and the
// intent is the only trace of it.
func (v *Volume) settles(e Restored, f InFlight, now time.Time) bool {
	return e.Truth != nil && e.AsOf.After(f.Deadline) && !f.Deadline.After(now)
}

// fence freezes node n until the deadline of an earlier incarnation's
// operation that may still land there (a deadline already past: no freeze,
// but the outcome is unknown): no operation starts on n and no
// older truth counts until then (checkPrepare lifts it; the Uncertain
// attachment is then resolved by an idempotent attach or detach). The
// attachment counts as existing meanwhile, so an exclusive volume is
// attached nowhere else (I1). Either makes a listed attachment Uncertain
// and unlisted: a detach that may land may take it away (never mount what
// may vanish), an attach that may land may put it at another device than
// the one listed (the listing may predate a loss of the attachment).
func (v *Volume) fence(now time.Time, n NodeName, until time.Time) []Effect {
	a := v.att.get(n)
	if a == nil {
		a = &Attachment{}
		v.att.put(n, a)
	}
	if until.After(a.Fence) {
		a.Fence = until
	}
	v.set(a, Uncertain, now)
	return []Effect{ReportDetached{Node: n}, WakeAt{At: a.Fence}}
}
