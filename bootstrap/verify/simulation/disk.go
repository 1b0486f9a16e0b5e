package simulation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/reconciler"
)

type opKind uint8

const (
	opStage opKind = iota
	opUnstage
	opPublish
	opUnpublish
)

func (k opKind) String() string { return [...]string{"stage", "unstage", "publish", "unpublish"}[k] }

// diskOp is one mount operation of an agent.
type diskOp struct {
	kind opKind
	vol  cloud.VolumeID
	uid  string
	dev  string
	op   uint64
}

type mountState uint8

const (
	mounted mountState = iota + 1
	halfDone
)

// disk is a node's pod directory tree: the stages (global mounts) and
// publishes (workload mounts) that exist, working or half-done. It
// outlives the agent.
type disk struct {
	stages map[cloud.VolumeID]mountState
	pubs   map[reconciler.PubKey]mountState
}

func newDisk() *disk {
	return &disk{stages: map[cloud.VolumeID]mountState{}, pubs: map[reconciler.PubKey]mountState{}}
}

// scan is what the agent reads back at start.
func (d *disk) scan() reconciler.Restored {
	r := reconciler.Restored{Stages: map[cloud.VolumeID]reconciler.Found{}, Publishes: map[reconciler.PubKey]reconciler.Found{}}
	for v, s := range d.stages {
		r.Stages[v] = reconciler.Found{Mounted: s == mounted}
	}
	for k, s := range d.pubs {
		r.Publishes[k] = reconciler.Found{Mounted: s == mounted}
	}
	return r
}

// has reports anything of vol on the disk, half-done included.
func (d *disk) has(vol cloud.VolumeID) bool {
	if _, ok := d.stages[vol]; ok {
		return true
	}
	for k := range d.pubs {
		if k.Volume == vol {
			return true
		}
	}
	return false
}

// mountedOf keeps the volumes of vols the disk holds anything of.
func (d *disk) mountedOf(vols []cloud.VolumeID) []cloud.VolumeID {
	var out []cloud.VolumeID
	for _, v := range vols {
		if d.has(v) {
			out = append(out, v)
		}
	}
	return out
}

// halfDone leaves the target of op half-done (a mount interrupted, an
// unmount that failed half-way).
func (d *disk) halfDone(op *diskOp) {
	if op.kind == opStage || op.kind == opUnstage {
		d.stages[op.vol] = halfDone
		return
	}
	d.pubs[reconciler.PubKey{UID: op.uid, Volume: op.vol}] = halfDone
}

// reboot: every mount is gone, the directories remain (half-done).
func (d *disk) reboot() {
	for v := range d.stages {
		d.stages[v] = halfDone
	}
	for k := range d.pubs {
		d.pubs[k] = halfDone
	}
}

func (d *disk) String() string {
	var parts []string
	for _, v := range sortedKeys(d.stages) {
		parts = append(parts, fmt.Sprintf("stage %s:%s", v, stateName(d.stages[v])))
	}
	var keys []reconciler.PubKey
	for k := range d.pubs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y reconciler.PubKey) int {
		return strings.Compare(string(x.Volume)+"/"+x.UID, string(y.Volume)+"/"+y.UID)
	})
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("pub %s/%s:%s", k.Volume, k.UID, stateName(d.pubs[k])))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func stateName(s mountState) string {
	if s == mounted {
		return "mounted"
	}
	return "half-done"
}

// execOp carries out op on the agent's disk now and returns its error ("":
// success). A stage needs the device attached to the node's instance (the
// shell's Devices.Source); a publish needs the stage. canFail lets the plan
// inject a mount failure.
func (w *world) execOp(a *agentSim, op *diskOp, canFail bool) string {
	d := w.disks[a.node]
	pk := reconciler.PubKey{UID: op.uid, Volume: op.vol}
	switch op.kind {
	case opStage:
		holder, ok := w.deviceHolder(a.node, op.dev)
		if !ok && w.cfg.Break != "I3-device" {
			return w.opResult(a, op, "device "+op.dev+" not attached here")
		}
		if holder != op.vol && w.cfg.Break != "I3-device" {
			// As the shell's Devices.Source: the device must hold this
			// very volume.
			return w.opResult(a, op, "device "+op.dev+" holds "+string(holder))
		}
		w.chk.mounting(a.node, op, holder)
	case opPublish:
		if d.stages[op.vol] != mounted {
			return w.opResult(a, op, "global mount of "+string(op.vol)+" missing")
		}
		w.chk.mounting(a.node, op, op.vol)
	}
	s := w.plan.site("mount " + string(a.node))
	half := s.index(2) == 0
	if canFail && w.chance(s, w.cfg.Faults.MountFail) {
		w.fault("fail %s of %s on %s", op.kind, op.vol, a.node)
		if half {
			d.halfDone(op)
		}
		return w.opResult(a, op, "injected mount failure")
	}
	switch op.kind {
	case opStage:
		d.stages[op.vol] = mounted
	case opUnstage:
		delete(d.stages, op.vol)
	case opPublish:
		d.pubs[pk] = mounted
	case opUnpublish:
		delete(d.pubs, pk)
	}
	return w.opResult(a, op, "")
}

func (w *world) opResult(a *agentSim, op *diskOp, err string) string {
	if w.tracing {
		w.tracef("disk/%s: %s %s %s op %d: err %q -> %s", a.node, op.kind, op.vol, op.uid, op.op, err, w.disks[a.node])
	}
	return err
}

// deviceHolder returns the volume attached at dev to the node's running
// instance.
func (w *world) deviceHolder(n cloud.NodeName, dev string) (cloud.VolumeID, bool) {
	inst := w.instance(n)
	got, err := w.cloud.InstanceVolumes(bg, []cloud.InstanceID{inst})
	if err != nil {
		return "", false
	}
	for v, d := range got[inst] {
		if d == dev {
			return v, true
		}
	}
	return "", false
}
