package chaos

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/layout"
)

// csiObserver turns the fake driver's events into the timeline, each
// recorded where it happens, as it happens: the driver calls it under
// the lock that orders its calls' effects (csitest.Observed), so the
// stamps follow the order of the driver's changes.
//
//   - A ControllerPublishVolume or ControllerUnpublishVolume that
//     changed the nodes a volume is published to is an attachment
//     change of the cloud (I1, I2, I4 judged on it), its mode the
//     volume's as the run made it (modes), never as tether asked for
//     it.
//   - A NodeStageVolume or NodePublishVolume is a mount started when
//     the node plugin receives it (I3 is judged then: what the node
//     asked for, even if the driver refuses it) and ended when the
//     driver handled it, mounted if the driver holds it then (a lost
//     reply's effect stays).
//   - A NodeUnstageVolume or NodeUnpublishVolume ends an unmount when
//     the driver handled it, still mounted if the driver still holds
//     it.
//
// The volume counts as mounted on the node from the stage or publish
// received until the driver no longer holds it: I2 is judged on what
// the driver has staged and published, not on what the agent believes.
func (c *Checker) csiObserver(names map[string]cloud.NodeName, modes map[cloud.VolumeID]cloud.AccessMode) func(csitest.Event) {
	return func(e csitest.Event) {
		vol, n := cloud.VolumeID(e.Call.Volume), names[e.Call.Node]
		r := record{vol: vol, node: n, target: e.Call.Path, mounted: e.Holds(e.Call.Path)}
		if e.Err != nil {
			r.err = e.Err.Error()
		}
		switch e.Call.Method {
		case "ControllerPublishVolume", "ControllerUnpublishVolume":
			if e.Phase == csitest.Done && e.Applied {
				c.csiPublications(e, vol, names, modes[vol])
			}
			return
		case "NodeStageVolume", "NodePublishVolume":
			r.op, r.kind = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(e.Call.Method, "Node"), "Volume")), recMountEnd
			if e.Phase == csitest.Received {
				r.kind = recMountStart
			}
		default: // NodeUnstageVolume, NodeUnpublishVolume
			if e.Phase == csitest.Received {
				return
			}
			r.op, r.kind = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(e.Call.Method, "Node"), "Volume")), recUnmountEnd
		}
		c.add(r)
	}
}

// csiPublications records the attachment changes of a controller call:
// the nodes its volume is published to before and after it.
func (c *Checker) csiPublications(e csitest.Event, vol cloud.VolumeID, names map[string]cloud.NodeName, mode cloud.AccessMode) {
	change := func(id string, attached bool, reason string) {
		c.add(record{kind: recCloud, vol: vol, node: names[id], change: sim.Change{Time: e.Time, Volume: vol,
			Instance: cloud.InstanceID(id), Node: names[id], Mode: mode, Attached: attached, Reason: reason}})
	}
	for _, id := range e.Before {
		if !e.Holds(id) {
			change(id, false, sim.ReasonDetach)
		}
	}
	for _, id := range e.After {
		if !slices.Contains(e.Before, id) {
			change(id, true, sim.ReasonAttach)
		}
	}
}

// diff is I5 on CSI: the driver's own state (what each volume is
// published to, staged at and published at, on each node) against the
// workloads, nothing else published, staged or published anywhere.
func (r *csiRig) diff(run *runner) []Violation {
	truth := map[cloud.VolumeID][]cloud.InstanceID{}
	for i := range run.cfg.Volumes {
		v := volName(i)
		for _, id := range r.d.PublishedTo(string(v)) {
			truth[v] = append(truth[v], cloud.InstanceID(id))
		}
	}
	nodeOf := map[cloud.InstanceID]cloud.NodeName{}
	for id, n := range r.names {
		nodeOf[cloud.InstanceID(id)] = n
	}
	return diffTruth(run.wls, run.cfg.Volumes, run.e.NodeNames, truth, nodeOf, func(n cloud.NodeName) ([]found, error) {
		return r.mounts(run.e.NodeDir(n), n, run.cfg.Volumes)
	})
}

// mounts lists what the driver holds on node n (whose agent's data
// directory is dir) as diffTruth's found: "stage v" and "publish uid/v"
// at the agent's paths, anything else with its path.
func (r *csiRig) mounts(dir string, n cloud.NodeName, volumes int) ([]found, error) {
	i := slices.Index(r.nodeNames(), n)
	if i < 0 {
		return nil, fmt.Errorf("chaos: csi: no node plugin for %s", n)
	}
	id := r.ids[i]
	l, err := layout.New(dir)
	if err != nil {
		return nil, err
	}
	var out []found
	for j := range volumes {
		v := volName(j)
		want, err := l.GlobalMount(process.CSIPlugin, string(v))
		if err != nil {
			return nil, err
		}
		for _, p := range r.d.Staged(string(v), id) {
			what := "stage " + string(v)
			if p != want {
				what += " at " + p
			}
			out = append(out, found{what: what, vol: v})
		}
		for _, p := range r.d.Targets(string(v), id) {
			out = append(out, found{what: "publish " + targetOf(l.Root(), v, p), vol: v})
		}
	}
	return out, nil
}

// targetOf names target path p of vol under root as "uid/vol" if it is
// a workload's (pods/<uid>/volumes/<plugin>/<vol>), else "vol at p".
func targetOf(root string, vol cloud.VolumeID, p string) string {
	rel, err := filepath.Rel(root, p)
	parts := strings.Split(rel, string(filepath.Separator))
	if err == nil && len(parts) == 5 && parts[0] == layout.PodsDir && parts[2] == layout.VolumesDir &&
		parts[3] == process.CSIPlugin && parts[4] == string(vol) {
		return parts[1] + "/" + string(vol)
	}
	return string(vol) + " at " + p
}
