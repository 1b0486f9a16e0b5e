package simulation

import (
	"fmt"
	"slices"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/reconciler"
)

type vn struct {
	v cloud.VolumeID
	n cloud.NodeName
}

// checker checks I1-I4 as the ground truth changes (every change of the
// cloud is observed, every mount operation reported).
type checker struct {
	w *world
	// forcing: the cloud detach being executed is a forced one (CallDetach
	// with a force reason) of this volume and node.
	forcing vn
	// force: the volume was force-detached from the node since it was last
	// attached there (I3: the agent may still mount it, unknowing).
	force map[vn]bool
	// console: the volume was detached from the node by the cloud console
	// while the node's disk had it staged, and not attached there since: a
	// publish of that stage (I3) mounts what the cloud took away, not
	// tether. A new stage needs the device attached, so the excuse covers
	// nothing tether could have done.
	console map[vn]bool
	// newest: per node, the simulation's number of the newest VolumesInUse
	// report its node actors applied; stale: the last time one applied an
	// older report after a newer one (for the I2 detail).
	newest map[cloud.NodeName]uint64
	stale  map[cloud.NodeName]string
}

// reportApplied notes a node actor applying a VolumesInUse report older
// than one it already applied (reordered on the link).
func (c *checker) reportApplied(n cloud.NodeName, m inUseMsg) {
	if m.Num < c.newest[n] {
		c.stale[n] = fmt.Sprintf("at %s node %s applied VolumesInUse report #%d %v after the newer report #%d",
			c.w.now.Sub(epoch), n, m.Num, m.Volumes, c.newest[n])
		return
	}
	c.newest[n] = m.Num
}

// observe is the sim cloud's hook: I1 at each attach, I2 and I4 at each
// detach by tether (I2 allows a forced one).
func (c *checker) observe(ch sim.Change) {
	w := c.w
	key := vn{ch.Volume, ch.Node}
	w.tracef("cloud: %s %s %s attached=%v (%s)", ch.Volume, ch.Node, ch.Instance, ch.Attached, ch.Reason)
	if ch.Attached {
		delete(c.force, key)
		delete(c.console, key)
		if insts := w.cloud.Attachments()[ch.Volume]; w.modes[ch.Volume] == cloud.Exclusive && len(insts) > 1 {
			w.violate("I1", ch.Volume, ch.Node, fmt.Sprintf("exclusive volume attached to %v", insts))
		}
		return
	}
	if ch.Reason == sim.ReasonConsole && w.disks[ch.Node].stages[ch.Volume] == mounted {
		c.console[key] = true
	}
	if ch.Reason != sim.ReasonDetach {
		return
	}
	if c.forcing == key {
		c.force[key] = true
		w.forced++
	}
	if d := w.disks[ch.Node]; d.has(ch.Volume) && !c.force[key] {
		detail := fmt.Sprintf("detached while the disk holds %s", d)
		if s := c.stale[ch.Node]; s != "" {
			detail += "; last stale report: " + s
		}
		w.violate("I2", ch.Volume, ch.Node, detail)
	}
	if st, ok, _ := w.st.NodeStatus(ch.Node); ok {
		if dev, listed := st.VolumesAttached[ch.Volume]; listed {
			w.violate("I4", ch.Volume, ch.Node, fmt.Sprintf("detached while the persisted status lists it attached at %s", dev))
		}
	}
}

// decided checks the agent's side of I3 when it starts a stage or
// publish: the last status the agent saw lists the volume in use and
// attached, and that status is not superseded by the agent's own reports:
// if the node's persisted VolumesInUse leaves the volume out while it has
// not yet heard the report in which the agent (last) started reporting
// the volume, the agent acted on a status older than its own report that
// dropped the volume, and nothing stops the controller from detaching it
// under the new mount ("our report was heard").
func (c *checker) decided(a *agentSim, vol cloud.VolumeID, kind opKind, held reconciler.StatusChanged) {
	w := c.w
	_, attached := held.Attached[vol]
	if !attached || !held.InUse[vol] {
		w.violate("I3", vol, a.node, fmt.Sprintf("%s started while the status the agent held has attached=%v in use=%v",
			kind, attached, held.InUse[vol]))
		return
	}
	if st, _, _ := w.st.NodeStatus(a.node); !st.VolumesInUse[vol] && w.heard[a.node] < a.addedAt[vol] {
		w.violate("I3", vol, a.node, fmt.Sprintf("%s started on a superseded status: the node's persisted VolumesInUse %v leaves the volume out, and the node has not heard report #%d that added it again (last heard: #%d)",
			kind, sortedKeys(st.VolumesInUse), a.addedAt[vol], w.heard[a.node]))
	}
}

// mounting checks the cloud's side of I3 when a stage or publish executes:
// the volume is attached to the node's instance (a stage: at the device it
// names, holder being the volume found there). A volume force-detached
// from the node is exempt: the agent could not know; so is the publish of
// a stage whose device the cloud console took away (console).
func (c *checker) mounting(n cloud.NodeName, op *diskOp, holder cloud.VolumeID) {
	w := c.w
	if holder != op.vol {
		held := string(holder)
		if held == "" {
			held = "nothing"
		}
		w.violate("I3", op.vol, n, fmt.Sprintf("%s of %s mounts device %q, which holds %s", op.kind, op.vol, op.dev, held))
		return
	}
	if c.force[vn{op.vol, n}] {
		return
	}
	if op.kind == opPublish && c.console[vn{op.vol, n}] {
		w.tracef("%s of %s on %s: its stage's device was detached in the cloud console (I3 excused)", op.kind, op.vol, n)
		return
	}
	inst := w.instance(n)
	if !w.cloud.Running(inst) || !slices.Contains(w.cloud.Attachments()[op.vol], inst) {
		w.violate("I3", op.vol, n, fmt.Sprintf("%s while the cloud does not have it attached to %s", op.kind, inst))
	}
}

func (w *world) violate(inv string, v cloud.VolumeID, n cloud.NodeName, detail string) {
	w.tracef("VIOLATION %s volume %s node %s: %s", inv, v, n, detail)
	w.violations = append(w.violations, Violation{Invariant: inv, Volume: string(v), Node: string(n), Time: w.now.Sub(epoch), Detail: detail})
}
