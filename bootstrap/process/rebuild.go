package process

// Recovery of a lost store (tether up --rebuild-store): the desired state is
// rebuilt from the two things that outlive the store, the cloud account
// (its instances are the nodes, its disks the volumes, with their access
// modes) and the node directories (every workload's mounted volumes, from
// the mounts on disk). Nothing acts on it before it is complete: it is
// written in one transaction before the controller starts, so the first
// thing the controller sees is a desired state that wants what runs.

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// RebuildReport says what a rebuild found and wrote.
type RebuildReport struct {
	// MovedAside is where the old store file went ("" if there was none).
	MovedAside string
	Nodes      int
	Volumes    int
	Workloads  int
	// Unclaimed lists the attachments ("volume@node") that no workload
	// mounts: nothing wants them, so the controller will detach them.
	Unclaimed []string
	// Skipped lists what was found on disk but cannot be part of the
	// desired state (a mount of a volume the cloud does not have, a
	// workload mounted on two nodes), with the reason.
	Skipped []string
}

// rebuildStore moves the store file at path aside, creates a new one and
// fills it from the cloud and the node directories. mounter gives the
// mounter of a node, to read its mounts.
func rebuildStore(path string, cl owner, ev evidence, mounter func(cloud.NodeName) (mount.Mounter, error)) (*store.Bolt, string, RebuildReport, error) {
	var rep RebuildReport
	id := ev.tag
	for _, nid := range ev.nodeIDs {
		if id == "" && nid != "" {
			id = nid
		}
	}
	if id == "" {
		id = newIdentity()
	}
	ops, err := desiredFromWorld(cl.Inventory(), ev, mounter, &rep)
	if err != nil {
		return nil, "", rep, err
	}
	if _, err := os.Lstat(path); err == nil {
		aside := fmt.Sprintf("%s.lost-%s", path, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := os.Rename(path, aside); err != nil {
			return nil, "", rep, fmt.Errorf("moving %s aside: %w", path, err)
		}
		rep.MovedAside = aside
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", rep, fmt.Errorf("store %s: %w", path, err)
	}
	st, err := store.CreateBolt(path)
	if err != nil {
		return nil, "", rep, err
	}
	if err := st.Apply(ops); err != nil {
		st.Close()
		return nil, "", rep, fmt.Errorf("writing the rebuilt desired state to %s: %w", path, err)
	}
	// The identity last: a rebuild killed before this point leaves a store
	// without one next to a tagged cloud, which the next start refuses
	// again (and --rebuild-store redoes).
	if err := st.SetIdentity(id); err != nil {
		st.Close()
		return nil, "", rep, fmt.Errorf("store %s: recording its identity: %w", path, err)
	}
	return st, id, rep, nil
}

// desiredFromWorld turns the cloud's inventory and the mounts on disk into
// one batch of desired-state writes.
func desiredFromWorld(inv sim.Inventory, ev evidence, mounter func(cloud.NodeName) (mount.Mounter, error), rep *RebuildReport) ([]store.Op, error) {
	nodes := map[cloud.NodeName]bool{}
	for _, in := range inv.Instances {
		nodes[in.Node] = true
	}
	modes := map[cloud.VolumeID]cloud.AccessMode{}
	for _, v := range inv.Volumes {
		modes[v.ID] = v.Mode
	}
	dirs := make([]string, 0, len(ev.nodeIDs))
	for dir := range ev.nodeIDs {
		dirs = append(dirs, dir)
	}
	slices.Sort(dirs)
	workloads := map[string]*store.Workload{}
	mounted := map[string]bool{}            // "volume@node"
	readOnly, err := mount.ReadOnlyPoints() // bind mounts say; symlinks cannot
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	for _, dir := range dirs {
		n := cloud.NodeName(filepath.Base(dir))
		nodes[n] = true
		m, err := mounter(n)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n, err)
		}
		l, err := layout.New(dir)
		if err != nil {
			return nil, err
		}
		found, err := mount.Scan(l, m)
		if err != nil {
			return nil, fmt.Errorf("reading the mounts of node %s: %w", n, err)
		}
		for _, e := range found.Entries {
			if e.Kind != mount.KindPublish || e.State == mount.Absent {
				continue
			}
			vol := cloud.VolumeID(e.Volume)
			if _, ok := modes[vol]; !ok {
				rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: volume %s is not in the cloud", e.Path, vol))
				continue
			}
			w := workloads[e.UID]
			switch {
			case w == nil:
				w = &store.Workload{UID: e.UID, Node: n}
				workloads[e.UID] = w
			case w.Node != n:
				rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: workload %s is also mounted on node %s (kept there)", e.Path, e.UID, w.Node))
				continue
			}
			if !slices.Contains(w.Volumes, vol) {
				w.Volumes = append(w.Volumes, vol)
				if readOnly[e.Path] {
					w.ReadOnly = append(w.ReadOnly, vol)
				}
			}
			mounted[string(vol)+"@"+string(n)] = true
		}
	}
	var ops []store.Op
	for _, n := range sortedNames(nodes) {
		ops = append(ops, store.Op{PutNode: &store.NodeSpec{Name: n}})
	}
	for _, v := range inv.Volumes {
		ops = append(ops, store.Op{PutVolume: &store.VolumeSpec{ID: v.ID, Mode: v.Mode, ReadOnly: v.Mode == cloud.MultiNode && v.ReadOnly}})
		for _, n := range v.Attached {
			if !mounted[string(v.ID)+"@"+string(n)] {
				rep.Unclaimed = append(rep.Unclaimed, string(v.ID)+"@"+string(n))
			}
		}
	}
	ws := make([]*store.Workload, 0, len(workloads))
	for _, w := range workloads {
		slices.SortFunc(w.Volumes, func(a, b cloud.VolumeID) int { return cmp.Compare(a, b) })
		slices.SortFunc(w.ReadOnly, func(a, b cloud.VolumeID) int { return cmp.Compare(a, b) })
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b *store.Workload) int { return cmp.Compare(a.UID, b.UID) })
	for _, w := range ws {
		ops = append(ops, store.Op{PutWorkload: w})
	}
	rep.Nodes, rep.Volumes, rep.Workloads = len(nodes), len(inv.Volumes), len(ws)
	return ops, nil
}

func sortedNames(m map[cloud.NodeName]bool) []cloud.NodeName {
	out := make([]cloud.NodeName, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
