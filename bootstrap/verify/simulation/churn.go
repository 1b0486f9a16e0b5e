package simulation

import (
	"fmt"
	"slices"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// scheduleChurn plans the next workload change of the faulty phase. Each
// change draws the same five values, whatever it turns out to be.
func (w *world) scheduleChurn() {
	if w.cfg.Faults.WorkloadEvery <= 0 {
		return
	}
	s := w.plan.site("churn")
	w.after(s.exp(w.cfg.Faults.WorkloadEvery), func() {
		if w.calm {
			return
		}
		var d [5]float64
		for i := range d {
			d[i] = s.float()
		}
		switch pickOf(d[0], 3) {
		case 0:
			w.createWorkload(s, d[1:])
		case 1:
			w.moveWorkload(s, d[1:])
		default:
			w.deleteWorkload(s, d[1:])
		}
		w.scheduleChurn()
	})
}

// pickOf maps a draw in [0, 1) to [0, n).
func pickOf(x float64, n int) int { return min(int(x*float64(n)), n-1) }

// createWorkload puts a new workload on a node (in the desired state) with
// one or two volumes; an exclusive volume used on another node is left
// out. s nil: a workload
// of the initial state (no decision, nobody to tell).
func (w *world) createWorkload(s *site, d []float64) {
	n := w.nodeNs[pickOf(d[0], len(w.nodeNs))]
	var vols []cloud.VolumeID
	for _, x := range d[2 : 3+pickOf(d[1], 2)] {
		v := w.volIDs[pickOf(x, len(w.volIDs))]
		if !slices.Contains(vols, v) && !w.conflicts(v, n, "") {
			vols = append(vols, v)
		}
	}
	if len(vols) == 0 || w.nodeDeleted[n] || (s != nil && !w.take(s)) {
		return
	}
	w.nextUID++
	wl := store.Workload{UID: fmt.Sprintf("w%d", w.nextUID), Node: n, Volumes: vols}
	must(w.st.PutWorkload(wl))
	if s != nil {
		w.fault("create workload %s on %s using %v", wl.UID, n, vols)
		w.tell(vols, n)
	}
}

// moveWorkload reschedules a workload on another node, unless one of its
// exclusive volumes is used on a third node.
func (w *world) moveWorkload(s *site, d []float64) {
	ws, _ := w.st.Workloads()
	if len(ws) == 0 {
		return
	}
	wl := ws[pickOf(d[0], len(ws))]
	n := w.nodeNs[pickOf(d[1], len(w.nodeNs))]
	if n == wl.Node || w.nodeDeleted[n] {
		return
	}
	for _, v := range wl.Volumes {
		if w.conflicts(v, n, wl.UID) {
			return
		}
	}
	if !w.take(s) {
		return
	}
	w.fault("move workload %s from %s to %s (volumes %v)", wl.UID, wl.Node, n, wl.Volumes)
	old := wl.Node
	wl.Node = n
	must(w.st.PutWorkload(wl))
	w.tell(wl.Volumes, old, n)
}

func (w *world) deleteWorkload(s *site, d []float64) {
	ws, _ := w.st.Workloads()
	if len(ws) == 0 {
		return
	}
	wl := ws[pickOf(d[0], len(ws))]
	if !w.take(s) {
		return
	}
	w.fault("delete workload %s on %s (volumes %v)", wl.UID, wl.Node, wl.Volumes)
	must(w.st.DeleteWorkload(wl.UID))
	w.tell(wl.Volumes, wl.Node)
}

// conflicts: an exclusive volume is used by a workload (other than skip)
// on a node other than n.
func (w *world) conflicts(v cloud.VolumeID, n cloud.NodeName, skip string) bool {
	if w.modes[v] != cloud.Exclusive {
		return false
	}
	ws, _ := w.st.Workloads()
	for _, wl := range ws {
		if wl.UID != skip && wl.Node != n && slices.Contains(wl.Volumes, v) {
			return true
		}
	}
	return false
}

// tell is the controller's ApplyAll after the store write: each volume
// hears its desired nodes with the store revision (in-process, FIFO), each
// node's agent its workloads (over the link).
func (w *world) tell(vols []cloud.VolumeID, nodes ...cloud.NodeName) {
	rev, _ := w.st.Revision()
	for _, v := range vols {
		desired, _ := w.st.DesiredNodes(v)
		w.send(desiredAddr, volAddr(v), desiredNodes(v, w.modes[v], rev, desired))
	}
	for _, n := range nodes {
		w.sendLink(desiredAddr, agentAddr(n), n, w.workloadsOf(n))
	}
}
