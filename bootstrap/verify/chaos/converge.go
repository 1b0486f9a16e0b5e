package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// converge waits until the ground truth (the cloud's attachments and the
// mounts on disk, read directly: nothing moves any more) matches the
// desired state, or limit passes. It returns what still differs, as I5
// violations.
func (r *runner) converge(ctx context.Context, limit time.Duration) []Violation {
	diff := waitConverged(ctx, limit, r.diff)
	for i := range diff {
		h := r.chk.History(diff[i].Volume)
		diff[i].History = h[max(0, len(h)-keep):]
	}
	return diff
}

// waitConverged polls diff until it finds nothing, or limit passes: then
// what it still finds are I5 violations.
func waitConverged(ctx context.Context, limit time.Duration, diff func() []Violation) []Violation {
	deadline := time.Now().Add(limit)
	for {
		d := diff()
		if len(d) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			for i := range d {
				d[i].Invariant, d[i].Time = "I5", time.Now()
				d[i].Detail = fmt.Sprintf("not converged %s after faults stopped: %s", limit, d[i].Detail)
			}
			return d
		}
		time.Sleep(50 * time.Millisecond) // polling ground truth with a deadline
	}
}

// diff: attachments exactly where workloads are, and exactly their mounts
// (stage and publish) on disk, nothing half-done, every stage on its
// volume's current device (stageDevices); on CSI, in the driver's own
// state (csiRig.diff).
func (r *runner) diff() []Violation {
	if r.csi != nil {
		return r.csi.diff(r)
	}
	nodeOf := map[cloud.InstanceID]cloud.NodeName{}
	for _, n := range r.e.NodeNames {
		if in, ok := r.acct.InstanceOf(n); ok {
			nodeOf[in] = n
		}
	}
	out := diffTruth(r.wls, r.cfg.Volumes, r.e.NodeNames, r.acct.Attachments(), nodeOf, r.diskMounts)
	return append(out, r.stageDevices()...)
}

func (r *runner) diskMounts(n cloud.NodeName) ([]found, error) {
	m, err := r.e.Mounter(n)
	if err != nil {
		return nil, err
	}
	return mountsOnDisk(r.e.NodeDir(n), m)
}

// diffTruth compares the truth (truth: the cloud's attachments, nodeOf:
// the node of each instance, mounts: what is on each node's disk) with
// what the workloads want.
func diffTruth(wls map[string]store.Workload, volumes int, nodes []cloud.NodeName, truth map[cloud.VolumeID][]cloud.InstanceID,
	nodeOf map[cloud.InstanceID]cloud.NodeName, mounts func(cloud.NodeName) ([]found, error)) []Violation {
	wantAtt := map[cloud.VolumeID][]cloud.NodeName{}
	wantMounts := map[cloud.NodeName][]found{}
	for _, w := range wls {
		for _, v := range w.Volumes {
			if !slices.Contains(wantAtt[v], w.Node) {
				wantAtt[v] = append(wantAtt[v], w.Node)
				wantMounts[w.Node] = append(wantMounts[w.Node], found{"stage " + string(v), v})
			}
			wantMounts[w.Node] = append(wantMounts[w.Node], found{"publish " + w.UID + "/" + string(v), v})
		}
	}
	var out []Violation
	for i := 0; i < volumes; i++ {
		v := volName(i)
		var got []cloud.NodeName
		for _, inst := range truth[v] {
			if n, ok := nodeOf[inst]; ok {
				got = append(got, n)
			}
		}
		slices.Sort(got)
		slices.Sort(wantAtt[v])
		if !slices.Equal(got, wantAtt[v]) {
			out = append(out, Violation{Volume: v, Detail: fmt.Sprintf("%s attached to %v (instances %v), want %v", v, got, truth[v], wantAtt[v])})
		}
	}
	for _, n := range nodes {
		got, err := mounts(n)
		if err != nil {
			out = append(out, Violation{Node: n, Detail: err.Error()})
			continue
		}
		out = append(out, diffMounts(n, got, wantMounts[n])...)
	}
	return out
}

func diffMounts(n cloud.NodeName, got, want []found) []Violation {
	var out []Violation
	for _, g := range got {
		if !slices.Contains(want, g) {
			out = append(out, Violation{Volume: g.vol, Node: n, Detail: fmt.Sprintf("node %s has %s, unwanted", n, g.what)})
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, Violation{Volume: w.vol, Node: n, Detail: fmt.Sprintf("node %s lacks %s", n, w.what)})
		}
	}
	return out
}

// found is one stage or publish on disk.
type found struct {
	what string // "stage v" or "publish uid/v", followed by " (state)" unless mounted
	vol  cloud.VolumeID
}

// mountsOnDisk reads the stages and publishes under a node's data directory.
func mountsOnDisk(dir string, m mount.Mounter) ([]found, error) {
	l, err := layout.New(dir)
	if err != nil {
		return nil, err
	}
	entries, err := mount.Scan(l, m)
	if err != nil {
		return nil, err
	}
	var out []found
	for _, e := range entries.Entries {
		s := e.Kind + " " + e.Volume
		if e.Kind == mount.KindPublish {
			s = e.Kind + " " + e.UID + "/" + e.Volume
		}
		if e.State != mount.Mounted {
			s += " (" + e.State.String() + ")"
		}
		out = append(out, found{what: s, vol: cloud.VolumeID(e.Volume)})
	}
	return out, nil
}

// DiskMounts lists the stages and publishes on disk under a node agent's
// data directory, as "stage <volume>" and "publish <uid>/<volume>", each
// followed by " (partial)" or " (absent)" where no working mount is.
func DiskMounts(dataDir string, m mount.Mounter) ([]string, error) {
	found, err := mountsOnDisk(dataDir, m)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.what
	}
	return out, nil
}
