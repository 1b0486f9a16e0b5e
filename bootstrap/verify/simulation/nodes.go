package simulation

import (
	"slices"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// deleteNode deletes node n and its workloads from the desired state in one
// store transaction, as the API would, while whatever is attached or
// mounted there stays: the volumes must be detached in the end (the
// machine's agent, if it still runs, unmounts them first). The caller took
// the decision. Two decisions of their own may follow: the whole
// controller restarts right after (one time in two), and the node
// registers again minutes later.
func (w *world) deleteNode(n cloud.NodeName) {
	ws, _ := w.st.WorkloadsOn(n)
	var ops []store.Op
	var uids []string
	var vols []cloud.VolumeID
	for _, wl := range ws {
		ops = append(ops, store.Op{DeleteWorkload: wl.UID})
		uids = append(uids, wl.UID)
		vols = union(vols, wl.Volumes)
	}
	must(w.st.Apply(append(ops, store.Op{DeleteNode: n})))
	w.nodeDeleted[n] = true
	w.fault("delete node %s and its workloads %v (volumes %v) from the desired state", n, uids, vols)
	w.tell(vols, n)

	r := w.plan.site("restart after deleting " + string(n))
	restartIn, back, coin := r.uniform(0, 3*time.Second), r.uniform(time.Minute, 5*time.Minute), r.float()
	if coin < 0.5 {
		w.after(restartIn, func() {
			if !w.calm && w.take(r) {
				w.restartController(r, 500*time.Millisecond+restartIn)
			}
		})
	}
	reg := w.plan.site("register " + string(n))
	w.after(back, func() {
		if !w.calm && w.nodeDeleted[n] && w.take(reg) {
			w.registerNode(n)
		}
	})
}

// registerNode puts a deleted node back in the desired state (with no
// workloads); a node whose machine was deleted registers from a new one.
func (w *world) registerNode(n cloud.NodeName) {
	must(w.st.PutNode(store.NodeSpec{Name: n}))
	w.nodeDeleted[n] = false
	w.fault("register node %s again (machine %s)", n, w.machines[n])
	if w.machines[n] == machineGone {
		w.replaceInstance(n)
	}
}

// restartController kills every controller core at once (volumes, node
// actors, the sync), as a controller process that dies: its in-process
// messages, its mailboxes and its instance cache are lost with it, its
// cloud calls in flight still land. It comes back after down, every core
// rebuilding from the store and the cloud.
func (w *world) restartController(s *site, down time.Duration) {
	w.fault("restart the controller (back in %s)", down)
	var cores []killable
	for _, v := range w.volIDs {
		cores = append(cores, w.vols[v])
	}
	for _, n := range w.nodeNs {
		cores = append(cores, w.nodes[n])
	}
	cores = append(cores, w.sync)
	for _, k := range cores {
		if k.isAlive() {
			w.kills++
			k.kill()
		}
	}
	w.ctrlEpoch++
	clear(w.instCache)
	for _, k := range cores {
		w.after(down+s.uniform(0, 100*time.Millisecond), func() {
			if !k.isAlive() {
				k.start()
			}
		})
	}
}

// liveNodes lists the nodes in the desired state.
func (w *world) liveNodes() []cloud.NodeName {
	var out []cloud.NodeName
	for _, n := range w.nodeNs {
		if !w.nodeDeleted[n] {
			out = append(out, n)
		}
	}
	return out
}

func union(a, b []cloud.VolumeID) []cloud.VolumeID {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
