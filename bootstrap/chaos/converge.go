package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// converge waits until the ground truth (the cloud's attachments and the
// mounts on disk, read directly: nothing moves any more) matches the
// desired state, or limit passes. It returns what still differs, as I5
// violations.
func (r *runner) converge(ctx context.Context, limit time.Duration) []Violation {
	deadline := time.Now().Add(limit)
	for {
		diff := r.diff()
		if len(diff) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			for i := range diff {
				diff[i].Invariant, diff[i].Time = "I5", time.Now()
				diff[i].Detail = fmt.Sprintf("not converged %s after faults stopped: %s", limit, diff[i].Detail)
				h := r.chk.History(diff[i].Volume)
				diff[i].History = h[max(0, len(h)-keep):]
			}
			return diff
		}
		time.Sleep(50 * time.Millisecond) // polling ground truth with a deadline
	}
}

// diff: attachments exactly where workloads are, and exactly their mounts
// (stage and publish) on disk, nothing half-done.
func (r *runner) diff() []Violation {
	wantAtt := map[cloud.VolumeID][]cloud.NodeName{}
	wantMounts := map[cloud.NodeName][]found{}
	for _, w := range r.wls {
		for _, v := range w.Volumes {
			if !slices.Contains(wantAtt[v], w.Node) {
				wantAtt[v] = append(wantAtt[v], w.Node)
				wantMounts[w.Node] = append(wantMounts[w.Node], found{"stage " + string(v), v})
			}
			wantMounts[w.Node] = append(wantMounts[w.Node], found{"publish " + w.UID + "/" + string(v), v})
		}
	}
	var out []Violation
	truth := r.e.Cloud.Attachments()
	for i := 0; i < r.cfg.Volumes; i++ {
		v := volName(i)
		var got []cloud.NodeName
		for _, inst := range truth[v] {
			for _, n := range r.e.NodeNames {
				if in, _ := r.e.Cloud.InstanceOf(n); in == inst {
					got = append(got, n)
				}
			}
		}
		slices.Sort(got)
		slices.Sort(wantAtt[v])
		if !slices.Equal(got, wantAtt[v]) {
			out = append(out, Violation{Volume: v, Detail: fmt.Sprintf("%s attached to %v (instances %v), want %v", v, got, truth[v], wantAtt[v])})
		}
	}
	for _, n := range r.e.NodeNames {
		out = append(out, r.diffMounts(n, wantMounts[n])...)
	}
	return out
}

func (r *runner) diffMounts(n cloud.NodeName, want []found) []Violation {
	m, err := r.e.Mounter(n)
	if err != nil {
		return []Violation{{Node: n, Detail: err.Error()}}
	}
	got, err := mountsOnDisk(r.e.NodeDir(n), m)
	if err != nil {
		return []Violation{{Node: n, Detail: err.Error()}}
	}
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
