package simulation

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/reconciler"
)

// checkConverged probes I5: every workload's volumes attached to its node
// and staged and published there, nothing else attached or mounted. final:
// the deadline has come, a difference is a violation.
func (w *world) checkConverged(final bool) {
	diffs := w.differences()
	if len(diffs) == 0 {
		if w.convergedAt.IsZero() {
			w.convergedAt = w.now
			w.tracef("converged")
		}
		return
	}
	if final {
		d := diffs[0]
		var notes []string
		for _, n := range w.nodeNs {
			if note := w.agentNote(n); note != "" {
				notes = append(notes, note)
			}
		}
		w.violate("I5", d.v, d.n, fmt.Sprintf("not converged %s after the calm began: %s%s%s", w.now.Sub(w.calmAt),
			strings.Join(diffText(diffs), "; "), strings.Join(notes, ""), w.volumeNote(d.v)))
	}
}

type diff struct {
	v    cloud.VolumeID
	n    cloud.NodeName
	what string
}

func diffText(ds []diff) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s on %s: %s", d.v, d.n, d.what)
	}
	return out
}

// deviceNote says where the status and the cloud put a volume's device.
func (w *world) deviceNote(v cloud.VolumeID, n cloud.NodeName) string {
	st, _, _ := w.st.NodeStatus(n)
	dev, listed := st.VolumesAttached[v]
	inst := w.instance(n)
	got, _ := w.cloud.InstanceVolumes(bg, []cloud.InstanceID{inst})
	return fmt.Sprintf(" (status: listed=%v device %q; cloud: device %q)", listed, dev, got[inst][v])
}

// volumeNote shows what a volume's core believes.
func (w *world) volumeNote(v cloud.VolumeID) string {
	vs := w.vols[v]
	if !vs.alive || vs.runner.Restoring() {
		return fmt.Sprintf(" [volume %s is down or restoring]", v)
	}
	st := vs.runner.Status()
	var parts []string
	for _, n := range sortedKeys(st.Attachments) {
		a := st.Attachments[n]
		parts = append(parts, fmt.Sprintf("%s:%s dev=%q since=%s", n, a.State, a.DevicePath, a.Since.Sub(epoch)))
	}
	return fmt.Sprintf(" [volume %s core: desired %v attachments {%s} nodes %v]", v, st.Desired, strings.Join(parts, ", "), st.Nodes)
}

// agentNote says whether a node's agent works from a view other than the
// controller's: a status other than the persisted one, workloads other
// than the store's.
func (w *world) agentNote(n cloud.NodeName) string {
	a := w.agents[n]
	if !a.alive {
		return fmt.Sprintf(" [agent %s is down]", n)
	}
	var stale []string
	if st, _, _ := w.st.NodeStatus(n); !maps.Equal(st.VolumesAttached, a.seen.Attached) || !maps.Equal(st.VolumesInUse, a.seen.InUse) {
		stale = append(stale, fmt.Sprintf("sees status attached=%v in use=%v, persisted is attached=%v in use=%v",
			a.seen.Attached, a.seen.InUse, st.VolumesAttached, st.VolumesInUse))
	}
	if want := w.workloadsOf(n); !reflect.DeepEqual(want, a.desired) {
		stale = append(stale, fmt.Sprintf("has workloads %v, the store has %v", a.desired.Workloads, want.Workloads))
	}
	if len(stale) == 0 {
		return ""
	}
	return fmt.Sprintf(" [agent %s %s]", n, strings.Join(stale, "; "))
}

// differences lists what I5 wants and the ground truth lacks, then what
// the ground truth has and nobody wants.
func (w *world) differences() []diff {
	var out []diff
	wantStage := map[vn]bool{}
	wantPub := map[cloud.NodeName]map[reconciler.PubKey]bool{}
	ws, _ := w.st.Workloads()
	attached := w.cloud.Attachments()
	for _, wl := range ws {
		d := w.disks[wl.Node]
		inst := w.instance(wl.Node)
		if wantPub[wl.Node] == nil {
			wantPub[wl.Node] = map[reconciler.PubKey]bool{}
		}
		for _, v := range wl.Volumes {
			wantStage[vn{v, wl.Node}] = true
			pk := reconciler.PubKey{UID: wl.UID, Volume: v}
			wantPub[wl.Node][pk] = true
			switch {
			case !slices.Contains(attached[v], inst):
				out = append(out, diff{v, wl.Node, "not attached"})
			case d.stages[v] != mounted:
				out = append(out, diff{v, wl.Node, "not staged" + w.deviceNote(v, wl.Node)})
			case d.pubs[pk] != mounted:
				out = append(out, diff{v, wl.Node, "not published for " + wl.UID})
			}
		}
	}
	for _, n := range w.nodeNs {
		inst, d := w.instance(n), w.disks[n]
		for _, v := range w.volIDs {
			if !wantStage[vn{v, n}] && slices.Contains(attached[v], inst) {
				out = append(out, diff{v, n, "attached, wanted by nobody"})
			}
			if _, ok := d.stages[v]; ok && !wantStage[vn{v, n}] {
				out = append(out, diff{v, n, "staged, wanted by nobody"})
			}
		}
		for pk := range d.pubs {
			if !wantPub[n][pk] {
				out = append(out, diff{pk.Volume, n, "published for " + pk.UID + ", wanted by nobody"})
			}
		}
	}
	slices.SortFunc(out, func(a, b diff) int {
		return strings.Compare(string(a.n)+"/"+string(a.v)+a.what, string(b.n)+"/"+string(b.v)+b.what)
	})
	return out
}
