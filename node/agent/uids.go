package agent

// objectUIDs holds the ObjectUIDs of this node and of its workloads (from
// the controller's NodeWorkloads), so that the agent's events are stamped
// with the incarnation they are about. A workload that left the desired
// state keeps its UID for one more snapshot: the events of its unmount,
// which come after, still name it; after that they carry none (kept under
// the name, never shown for a later workload of that name). Memory: two
// snapshots' worth.
type objectUIDs struct {
	node      string
	cur, gone map[string]string // workload name -> UID
	rev       uint64            // of the snapshot in cur: an older one changes nothing
}

func (u *objectUIDs) update(rev uint64, node string, workloads map[string]string) {
	if rev != 0 && rev < u.rev {
		return
	}
	gone := map[string]string{}
	for name, uid := range u.cur {
		if _, ok := workloads[name]; !ok {
			gone[name] = uid
		}
	}
	u.node, u.cur, u.gone, u.rev = node, workloads, gone, rev
}

func (u *objectUIDs) workload(name string) string {
	if uid, ok := u.cur[name]; ok {
		return uid
	}
	return u.gone[name]
}
