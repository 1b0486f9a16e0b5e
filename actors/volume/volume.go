package volume

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/cloud"
)

type opKind int

const (
	opAttach opKind = iota
	opDetach
)

type opKey struct {
	node NodeName
	kind opKind
}

// Volume is the state machine of one volume. The zero value is not usable:
// use New. Until Restored arrives it starts no operation.
type Volume struct {
	id       VolumeID
	cfg      *Config
	mode     cloud.AccessMode
	restored bool
	desired  []NodeName
	att      attachments
	nodes    nodeInfos
	backoffs map[opKey]*backoff.Backoff
	// multiAttach remembers the nodes told about a Multi-Attach refusal, so
	// that the event is recorded once per volume and node.
	multiAttach map[NodeName]bool
	nextOp      uint64
	opBase      uint64
	// removed remembers when an attachment was deleted, per node, so that
	// truth asked before that is recognized as stale.
	removed map[NodeName]time.Time
	// floor: truth asked before the rebuild is stale.
	floor time.Time
}

// New returns the machine for volume id. opBase makes operation numbers of
// this incarnation distinct from those of earlier ones (the shell passes a
// random or time-derived value).
func New(id VolumeID, cfg Config, opBase uint64) *Volume {
	return NewShared(id, &cfg, opBase)
}

// NewShared is New with a configuration shared by many machines, which
// none changes: a fleet's volumes need not carry one copy each.
func NewShared(id VolumeID, cfg *Config, opBase uint64) *Volume {
	return &Volume{
		id:     id,
		cfg:    cfg,
		opBase: opBase,
	}
}

// Step applies one event at time now and returns the effects to carry out,
// in order. It never blocks and never reads the clock.
func (v *Volume) Step(now time.Time, ev Event) []Effect {
	var effs []Effect
	switch e := ev.(type) {
	case Restored:
		effs = v.onRestored(now, e)
	case DesiredChanged:
		v.onDesired(e)
	case NodeChanged:
		v.setNode(e.Node, e.Info)
	case AttachDone:
		effs = v.onAttachDone(now, e)
	case DetachPrepared:
		effs = v.onDetachPrepared(now, e)
	case DetachDone:
		effs = v.onDetachDone(now, e)
	case Verified:
		effs = v.onVerified(now, e)
	case AttachRecorded:
		if a := v.att.get(e.Node); a != nil {
			a.unacked = time.Time{}
		}
	case ReportFailed:
		// Not listed, so not mountable there: make it Uncertain, and the
		// (idempotent) attach of a desired node reports it again.
		if a := v.att.get(e.Node); a != nil && a.State == Attached && a.op == 0 {
			v.set(a, Uncertain, now)
		}
	case Tick:
	default:
		panic(fmt.Sprintf("volume: unknown event %T", ev))
	}
	return coalesceWakes(append(effs, v.reconcile(now)...))
}

// coalesceWakes keeps only the earliest WakeAt, last: the shell needs one
// timer per volume, not one per blocked operation.
func coalesceWakes(effs []Effect) []Effect {
	return clock.KeepEarliest(effs,
		func(e Effect) (time.Time, bool) { w, ok := e.(WakeAt); return w.At, ok },
		func(t time.Time) Effect { return WakeAt{At: t} })
}

func (v *Volume) onDesired(e DesiredChanged) {
	v.mode = e.Mode
	v.desired = slices.Clone(e.Desired)
	for n := range v.multiAttach {
		if !v.isDesired(n) {
			delete(v.multiAttach, n)
		}
	}
}

func (v *Volume) onAttachDone(now time.Time, e AttachDone) []Effect {
	a := v.att.get(e.Node)
	if a == nil || a.State != Attaching || a.op != e.Op {
		return []Effect{VerifyNode{Node: e.Node}}
	}
	a.op = 0
	if e.Err != cloud.KindNone {
		v.set(a, Uncertain, now)
		return v.failed(now, e.Node, opAttach, EventFailedAttach, e.Msg)
	}
	v.set(a, Attached, now)
	a.DevicePath = e.DevicePath
	delete(v.backoffs, opKey{e.Node, opAttach}) // success resets the backoff
	delete(v.multiAttach, e.Node)
	return []Effect{
		v.reportAttached(now, e.Node, a),
		Record{Type: EventSuccessfulAttach, Node: e.Node,
			Message: fmt.Sprintf("AttachVolume.Attach succeeded for volume %q on node %q (device %s)", v.id, e.Node, e.DevicePath)},
	}
}

func (v *Volume) onDetachPrepared(now time.Time, e DetachPrepared) []Effect {
	a := v.att.get(e.Node)
	if a == nil || a.State != Detaching || a.op != e.Op || a.prepared {
		return nil
	}
	if !e.OK {
		// Nothing was detached: back to where we were. The node may or may
		// not still list the volume (a late answer): report it again.
		a.op = 0
		v.set(a, a.prev, now)
		effs := v.failed(now, e.Node, opDetach, EventFailedDetach, "preparing node status for detach: "+e.Msg)
		if a.State == Attached {
			effs = append(effs, v.reportAttached(now, e.Node, a))
		}
		return effs
	}
	if _, allowed, _ := v.detachAllowed(now, e.Node, a); (v.isDesired(e.Node) && a.force == "") || (!allowed && a.force == "") {
		// Wanted again, or reported in use, while the status was being
		// written: keep it (I2), and list it again.
		a.op = 0
		v.set(a, a.prev, now)
		if a.State != Attached {
			return nil
		}
		return []Effect{v.reportAttached(now, e.Node, a)}
	}
	a.prepared = true
	return []Effect{CallDetach{Node: e.Node, Op: a.op, Force: a.force}}
}

func (v *Volume) onDetachDone(now time.Time, e DetachDone) []Effect {
	a := v.att.get(e.Node)
	if a == nil || a.State != Detaching || a.op != e.Op {
		return []Effect{VerifyNode{Node: e.Node}}
	}
	a.op = 0
	if e.Err != cloud.KindNone && e.Err != cloud.KindNotFound {
		v.set(a, Uncertain, now)
		return v.failed(now, e.Node, opDetach, EventFailedDetach, e.Msg)
	}
	v.remove(e.Node, now)
	delete(v.backoffs, opKey{e.Node, opDetach}) // success resets the backoff
	return []Effect{ReportDetached{Node: e.Node}, Record{Type: EventSuccessfulDetach, Node: e.Node,
		Message: fmt.Sprintf("DetachVolume.Detach succeeded for volume %q from node %q", v.id, e.Node)}}
}

// onVerified applies the cloud's truth for one node. Truth about a node with
// an operation in flight, or older than the attachment's last change, is
// stale and ignored: the operation's own result decides.
func (v *Volume) onVerified(now time.Time, e Verified) []Effect {
	a := v.att.get(e.Node)
	if a != nil && (a.op != 0 || !e.AsOf.After(a.Since) || e.AsOf.Before(a.Fence)) {
		return nil
	}
	if a == nil && (!e.AsOf.After(v.removed[e.Node]) || e.AsOf.Before(v.floor)) {
		return nil // asked before this attachment was removed, or before the rebuild
	}
	switch {
	case e.Attached && a == nil:
		a = &Attachment{DevicePath: e.DevicePath}
		v.att.put(e.Node, a)
		var effs []Effect
		if e.DevicePath == "" {
			// Attached, but where? Never report a device we do not know:
			// an (idempotent) attach will tell, or a detach will end it.
			v.set(a, Uncertain, now)
		} else {
			v.set(a, Attached, now)
			effs = append(effs, v.reportAttached(now, e.Node, a))
		}
		if !v.isDesired(e.Node) {
			effs = append(effs, Record{Type: EventDanglingAttachment, Node: e.Node, Warning: true,
				Message: fmt.Sprintf("volume %q is attached to node %q but no workload wants it there: detaching", v.id, e.Node)})
		}
		return effs
	case e.Attached && a.State == Attached:
		// The node status may have missed the report (its actor died
		// before persisting it): report again; the node ignores repeats.
		if e.DevicePath != "" {
			a.DevicePath = e.DevicePath
		}
		return []Effect{v.reportAttached(now, e.Node, a)}
	case e.Attached && a.State == Uncertain && e.DevicePath != "":
		v.set(a, Attached, now)
		a.DevicePath = e.DevicePath
		return []Effect{v.reportAttached(now, e.Node, a)}
	case !e.Attached && a != nil && a.State == Attached:
		v.remove(e.Node, now)
		return []Effect{ReportDetached{Node: e.Node}, Record{Type: EventAttachmentLost, Node: e.Node, Warning: true,
			Message: fmt.Sprintf("the cloud reports volume %q no longer attached to node %q", v.id, e.Node)}}
	case !e.Attached && a != nil && a.State == Uncertain:
		v.remove(e.Node, now)
		return []Effect{ReportDetached{Node: e.Node}}
	}
	return nil
}

// reportAttached lists the attachment in the node's VolumesAttached and
// waits for the node to say it recorded it (AttachRecorded); without an
// answer in PrepareTimeout the report is sent again (the node actor may
// have died with it).
func (v *Volume) reportAttached(now time.Time, n NodeName, a *Attachment) Effect {
	a.unacked = now
	return ReportAttached{Node: n, DevicePath: a.DevicePath}
}

// remove deletes an attachment and remembers when, so that truth asked
// before now is recognized as stale.
func (v *Volume) remove(n NodeName, now time.Time) {
	v.att.remove(n)
	if v.removed == nil {
		v.removed = map[NodeName]time.Time{}
	}
	v.removed[n] = now
	for m, at := range v.removed {
		if now.Sub(at) > v.cfg.TruthMemory {
			delete(v.removed, m)
		}
	}
}

func (v *Volume) failed(now time.Time, n NodeName, k opKind, typ, msg string) []Effect {
	u := 0.0
	if v.cfg.Rand != nil {
		u = v.cfg.Rand()
	}
	b := v.backoff(n, k)
	at := b.Fail(now, v.cfg.Backoff, u)
	return []Effect{Record{Type: typ, Node: n, Warning: true, Retry: at.Sub(now),
		Message: fmt.Sprintf("%s (failure %d; no retry for %s, until %s)", msg, b.Failures(), at.Sub(now), at.UTC().Format(time.RFC3339Nano))}}
}

func (v *Volume) backoff(n NodeName, k opKind) *backoff.Backoff {
	key := opKey{n, k}
	b := v.backoffs[key]
	if b == nil {
		b = &backoff.Backoff{}
		if v.backoffs == nil {
			v.backoffs = map[opKey]*backoff.Backoff{}
		}
		v.backoffs[key] = b
	}
	return b
}

// ready reports whether the backoff of (n, k) allows a try now; a volume
// that never failed holds no backoff state (idle actors stay small).
func (v *Volume) ready(now time.Time, n NodeName, k opKind) (bool, time.Time) {
	b := v.backoffs[opKey{n, k}]
	if b == nil || b.Ready(now) {
		return true, time.Time{}
	}
	return false, b.RetryAt()
}

// setNode records what a node reports; nodes that report nothing of
// interest are forgotten.
func (v *Volume) setNode(n NodeName, info NodeInfo) { v.nodes.set(n, info) }

// nodeInfos is what the volume knows of each node, a small slice: a volume
// hears of one node or two, and a map cost ~450 bytes of heap per volume.
type nodeInfos []nodeInfo

type nodeInfo struct {
	node NodeName
	info NodeInfo
}

// get returns what is known of n (zero: nothing).
func (ns nodeInfos) get(n NodeName) NodeInfo {
	for _, e := range ns {
		if e.node == n {
			return e.info
		}
	}
	return NodeInfo{}
}

// set records info for n; zero info forgets n.
func (ns *nodeInfos) set(n NodeName, info NodeInfo) {
	for i, e := range *ns {
		if e.node == n {
			if info == (NodeInfo{}) {
				*ns = slices.Delete(*ns, i, i+1)
			} else {
				(*ns)[i].info = info
			}
			return
		}
	}
	if info != (NodeInfo{}) {
		*ns = append(*ns, nodeInfo{n, info})
	}
}

// toMap is a copy as a map (nil when empty).
func (ns nodeInfos) toMap() map[NodeName]NodeInfo {
	if len(ns) == 0 {
		return nil
	}
	m := make(map[NodeName]NodeInfo, len(ns))
	for _, e := range ns {
		m[e.node] = e.info
	}
	return m
}

func (v *Volume) set(a *Attachment, s State, now time.Time) {
	a.State = s
	a.Since = now
}

func (v *Volume) isDesired(n NodeName) bool { return slices.Contains(v.desired, n) }

func sortedNodes[T any](m map[NodeName]T) []NodeName {
	out := make([]NodeName, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Status is a read-only view of the machine for status queries and tests.
type Status struct {
	Mode        cloud.AccessMode
	Restored    bool
	Desired     []NodeName
	Attachments map[NodeName]Attachment
	Nodes       map[NodeName]NodeInfo
}

// Status returns a copy of the machine's state.
func (v *Volume) Status() Status {
	st := Status{Mode: v.mode, Restored: v.restored, Desired: slices.Clone(v.desired), Attachments: map[NodeName]Attachment{}}
	for _, na := range v.att {
		n, a := na.node, na.a
		st.Attachments[n] = *a
	}
	st.Nodes = v.nodes.toMap()
	return st
}

// StateCounts counts attachments per state (cheaper than Status, for
// metrics after every step).
func (v *Volume) StateCounts() map[string]int {
	out := make(map[string]int, len(v.att))
	for _, na := range v.att {
		a := na.a
		out[a.State.String()]++
	}
	return out
}

// Settled reports that nothing is pending: the volume is attached, with
// the node's acknowledgement, on exactly the nodes desired, and no
// operation, fence or report awaits anything. A settled machine asks for
// no wake-up (Step returns no WakeAt): only a new event can give it work,
// so its shell may drop a timer set earlier.
func (v *Volume) Settled() bool {
	if !v.restored || len(v.att) != len(v.desired) {
		return false
	}
	for _, na := range v.att {
		a := na.a
		if a.State != Attached || a.op != 0 || !a.Fence.IsZero() || !a.unacked.IsZero() || !v.isDesired(na.node) {
			return false
		}
	}
	return true
}

// Idle reports that the volume is wanted nowhere and attached nowhere: its
// actor may stop.
func (v *Volume) Idle() bool { return v.restored && len(v.desired) == 0 && len(v.att) == 0 }
