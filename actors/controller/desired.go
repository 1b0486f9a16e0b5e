package controller

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// ErrInvalid is wrapped by every refusal of a desired-state change.
var ErrInvalid = errors.New("controller: invalid request")

// ApplyVolume creates or updates a volume.
func (c *Controller) ApplyVolume(v store.VolumeSpec) error {
	_, err := c.ApplyAll([]Change{{Volume: &v}})
	return err
}

// DeleteVolume removes a volume no workload uses; its actor detaches it
// from wherever it still is, then stops. The volume's events are
// forgotten.
func (c *Controller) DeleteVolume(id cloud.VolumeID) error {
	return c.DeleteVolumes([]cloud.VolumeID{id})
}

// ApplyNode registers a node; its actor starts and keeps its status.
func (c *Controller) ApplyNode(n store.NodeSpec) error {
	_, err := c.ApplyAll([]Change{{Node: &n}})
	return err
}

// ApplyWorkload creates or replaces a workload. Its node and volumes must
// exist. An exclusive volume claimed on two nodes is accepted: the second
// node waits (Multi-Attach), as in Kubernetes.
func (c *Controller) ApplyWorkload(w store.Workload) error {
	_, err := c.ApplyAll([]Change{{Workload: &w}})
	return err
}

// tellAgent sends a node agent its workloads as the store now has them.
func (c *Controller) tellAgent(node cloud.NodeName) error {
	if c.env.cluster != nil {
		// Only the node actor knows where the agent listens: it reads the
		// store and tells the agent, as when the agent starts.
		c.env.guard.Send(c.env.lookup.Node(node), &messages.AgentStarted{Node: string(node)})
		return nil
	}
	pid := c.env.agentFor(node)
	if pid == nil {
		return nil // not running: it asks for its state when it starts
	}
	msg, err := nodeWorkloads(c.env, node)
	if err != nil {
		return err
	}
	c.env.guard.Send(pid, msg)
	return nil
}

// tellAgents is tellAgent for every node of nodes; a bulk batch (see bulk)
// reads the workloads, nodes and volumes once for all of them.
func (c *Controller) tellAgents(nodes []cloud.NodeName) error {
	if c.env.cluster != nil || !c.bulk(len(nodes)) {
		for _, n := range nodes {
			if err := c.tellAgent(n); err != nil {
				return err
			}
		}
		return nil
	}
	msgs, err := agentMessages(c.env.store, nodes)
	if err != nil {
		return err
	}
	for i, n := range nodes {
		if pid := c.env.agentFor(n); pid != nil {
			c.env.guard.Send(pid, msgs[i])
		}
	}
	return nil
}

// agentMessages is nodeWorkloads for every node of nodes, from one read
// of each table.
func agentMessages(st store.Store, nodes []cloud.NodeName) ([]*messages.NodeWorkloads, error) {
	rev, err := st.Revision() // first: what is read after is at least as new
	if err != nil {
		return nil, err
	}
	ws, err := st.Workloads()
	if err != nil {
		return nil, err
	}
	specs, err := st.Nodes()
	if err != nil {
		return nil, err
	}
	vols, err := st.Volumes()
	if err != nil {
		return nil, err
	}
	return workloadMessages(rev, ws, specs, vols, nodes), nil
}

// workloadMessages is agentMessages on tables already read (rev read
// before them).
func workloadMessages(rev uint64, ws []store.Workload, specs []store.NodeSpec, vols []store.VolumeSpec, nodes []cloud.NodeName) []*messages.NodeWorkloads {
	rox := map[cloud.VolumeID]bool{}
	for _, v := range vols {
		if v.Mode == cloud.MultiNode && v.ReadOnly {
			rox[v.ID] = true
		}
	}
	byName := make(map[cloud.NodeName]store.NodeSpec, len(specs))
	for _, n := range specs {
		byName[n.Name] = n
	}
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b store.Workload) int { return cmp.Compare(a.Seq, b.Seq) }) // as WorkloadsOn lists them
	on := map[cloud.NodeName][]store.Workload{}
	for _, w := range ws {
		on[w.Node] = append(on[w.Node], w)
	}
	out := make([]*messages.NodeWorkloads, len(nodes))
	for i, n := range nodes {
		out[i] = workloadsMessage(n, rev, byName[n], on[n], rox)
	}
	return out
}

// DeleteNode removes a node no workload is scheduled on, and forgets its
// events.
func (c *Controller) DeleteNode(name cloud.NodeName) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ws, err := c.env.store.WorkloadsOn(name)
	if err != nil {
		return err
	}
	if len(ws) > 0 {
		return fmt.Errorf("%w: node %q runs %d workloads (%s first)", ErrInvalid, name, len(ws), ws[0].UID)
	}
	old, _, err := c.env.store.Node(name)
	if err != nil {
		return err
	}
	if err := c.env.store.DeleteNode(name); err != nil {
		return err
	}
	c.env.events.Forget(events.Ref{Kind: events.KindNode, Name: string(name), UID: old.ObjectUID})
	return nil
}

// DeleteWorkload removes a workload, forgetting its events; volumes it
// alone used get detached from its node once the node stops using them.
func (c *Controller) DeleteWorkload(uid string) error {
	return c.DeleteWorkloads([]string{uid})
}

// tellDesired tells each volume actor of a change just committed its
// desired nodes, unless the store's watch tells them (DesiredFromStore).
// Caller holds c.mu.
func (c *Controller) tellDesired(ids ...cloud.VolumeID) error {
	if c.env.desiredFromStore.Load() {
		return nil
	}
	return c.sendDesired(ids...)
}

// sendDesired sends each volume actor its desired nodes as the store now
// has them.
func (c *Controller) sendDesired(ids ...cloud.VolumeID) error {
	if c.bulk(len(ids)) {
		return c.tellDesiredBulk(ids)
	}
	for _, id := range ids {
		// The revision first: the data read after it is at least as new
		// (members of a cluster apply concurrently; see resyncAll).
		rev, err := c.env.store.Revision()
		if err != nil {
			return err
		}
		spec, ok, err := c.env.store.Volume(id)
		if err != nil {
			return err
		}
		nodes, err := c.env.store.DesiredNodes(id)
		if err != nil {
			return err
		}
		msg := &messages.SetDesiredNodes{VolumeId: string(id), AccessMode: modeToProto(spec.Mode), Deleted: !ok, Revision: rev, ObjectUid: spec.ObjectUID}
		for _, n := range nodes {
			msg.Nodes = append(msg.Nodes, string(n))
		}
		c.env.guard.Send(c.env.lookup.Volume(id), msg)
	}
	return nil
}

// bulkTell is how many volumes tellDesired tells from three reads of the
// whole store (revision, volumes, workloads) instead of three reads each:
// on etcd every read is a round trip, and a fleet's apply of 10,000
// volumes spent 21 ms per volume here.
const bulkTell = 64

// bulk says whether a batch of n objects reads whole tables once instead
// of each object it names: on a store whose reads are round trips
// (store.RemoteReads), from bulkTell objects on; in one process, where a
// read of one object costs microseconds, only from bulkLocal on (a batch
// of 64 documents read every object of a 100,000-volume store, but a
// fleet's apply of 200,000 read one by one queues on the store's lock
// with every actor's reads).
func (c *Controller) bulk(n int) bool {
	return n >= bulkLocal || n >= bulkTell && store.RemoteReads(c.env.store)
}

// bulkLocal: see bulk.
const bulkLocal = 4096

// tellDesiredBulk is tellDesired for many volumes at once.
func (c *Controller) tellDesiredBulk(ids []cloud.VolumeID) error {
	rev, err := c.env.store.Revision()
	if err != nil {
		return err
	}
	vols, err := c.env.store.Volumes()
	if err != nil {
		return err
	}
	ws, err := c.env.store.Workloads()
	if err != nil {
		return err
	}
	specs := make(map[cloud.VolumeID]store.VolumeSpec, len(vols))
	for _, v := range vols {
		specs[v.ID] = v
	}
	desired := desiredByVolume(ws)
	c.env.each(len(ids), func(i int) {
		id := ids[i]
		spec, ok := specs[id]
		c.env.guard.Send(c.env.lookup.Volume(id), &messages.SetDesiredNodes{VolumeId: string(id), AccessMode: modeToProto(spec.Mode),
			Deleted: !ok, Revision: rev, ObjectUid: spec.ObjectUID, Nodes: desired[id]})
	})
	return nil
}

// desiredByVolume is store.DesiredNodesOf for every volume at once: each
// volume's nodes in the order of the workloads' Seq (the first claim of an
// exclusive volume wins).
func desiredByVolume(ws []store.Workload) map[cloud.VolumeID][]string {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b store.Workload) int { return cmp.Compare(a.Seq, b.Seq) })
	desired := map[cloud.VolumeID][]string{}
	for _, w := range ws {
		for _, v := range w.Volumes {
			if !slices.Contains(desired[v], string(w.Node)) {
				desired[v] = append(desired[v], string(w.Node))
			}
		}
	}
	return desired
}

// The node agent's side of the protocol, for embedded agents and tests.

// ReportVolumesInUse forwards the node's VolumesInUse to its node actor.
func (c *Controller) ReportVolumesInUse(node cloud.NodeName, vols []cloud.VolumeID) {
	msg := &messages.ReportVolumesInUse{Node: string(node)}
	for _, v := range vols {
		msg.VolumeIds = append(msg.VolumeIds, string(v))
	}
	c.env.guard.Send(c.env.lookup.Node(node), msg)
}

// Heartbeat tells the node actor its agent is alive.
func (c *Controller) Heartbeat(node cloud.NodeName) {
	c.env.guard.Send(c.env.lookup.Node(node), &messages.Heartbeat{Node: string(node)})
}

// SetOutOfService marks a node out of service (or not).
func (c *Controller) SetOutOfService(node cloud.NodeName, oos bool) {
	c.env.guard.Send(c.env.lookup.Node(node), &messages.SetOutOfService{Node: string(node), OutOfService: oos})
}

// DeleteWorkloads removes many workloads in one store transaction (all or
// nothing; unknown ones are skipped), as DeleteWorkload does one: a fleet's
// teardown must not cost a transaction per workload.
func (c *Controller) DeleteWorkloads(uids []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ops []store.Op
	var olds []store.Workload
	var vols orderedSet[cloud.VolumeID]
	var nodes orderedSet[cloud.NodeName]
	r, err := c.reader(len(uids))
	if err != nil {
		return err
	}
	for _, uid := range uids {
		old, ok, err := r.Workload(uid)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		ops = append(ops, store.Op{DeleteWorkload: uid})
		olds = append(olds, old)
		vols.add(old.Volumes...)
		nodes.add(old.Node)
	}
	if len(ops) == 0 {
		return nil
	}
	if err := c.env.store.Apply(ops); err != nil {
		return err
	}
	for _, old := range olds {
		c.env.events.Forget(events.Ref{Kind: events.KindWorkload, Name: old.UID, UID: old.ObjectUID})
	}
	return c.tell(func() error {
		if err := c.tellDesired(vols.list...); err != nil {
			return err
		}
		return c.tellAgents(nodes.list)
	})
}

// deleteReader is reader for a batch of n volume deletions, with the
// nodes each volume's workloads want: for a big batch, from the snapshot's
// workloads, computed once (a fleet's teardown read the store twice per
// volume: 9.7 s for 10,000 volumes).
func (c *Controller) deleteReader(n int) (objects, func(cloud.VolumeID) ([]cloud.NodeName, error), error) {
	r, err := c.reader(n)
	if err != nil {
		return nil, nil, err
	}
	snap, ok := r.(*snapshot)
	if !ok {
		return r, c.env.store.DesiredNodes, nil
	}
	ws := make([]store.Workload, 0, len(snap.workloads))
	for _, w := range snap.workloads {
		ws = append(ws, w)
	}
	desired := desiredByVolume(ws)
	return r, func(id cloud.VolumeID) ([]cloud.NodeName, error) {
		var out []cloud.NodeName
		for _, n := range desired[id] {
			out = append(out, cloud.NodeName(n))
		}
		return out, nil
	}, nil
}

// DeleteVolumes removes many volumes in one store transaction, all or
// nothing: it refuses if any is still used by a workload. Unknown ones are
// skipped.
func (c *Controller) DeleteVolumes(ids []cloud.VolumeID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ops []store.Op
	var olds []store.VolumeSpec
	r, desiredNodes, err := c.deleteReader(len(ids))
	if err != nil {
		return err
	}
	for _, id := range ids {
		nodes, err := desiredNodes(id)
		if err != nil {
			return err
		}
		if len(nodes) > 0 {
			return fmt.Errorf("%w: volume %q is used by workloads on %v", ErrInvalid, id, nodes)
		}
		old, ok, err := r.Volume(id)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		ops = append(ops, store.Op{DeleteVolume: id})
		olds = append(olds, old)
	}
	if len(ops) == 0 {
		return nil
	}
	if err := c.env.store.Apply(ops); err != nil {
		return err
	}
	for _, old := range olds {
		c.env.events.Forget(events.Ref{Kind: events.KindVolume, Name: string(old.ID), UID: old.ObjectUID})
	}
	var vols []cloud.VolumeID
	for _, old := range olds {
		vols = append(vols, old.ID)
	}
	return c.tell(func() error { return c.tellDesired(vols...) })
}
