package controller

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/runtime/parallel"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// Distributed mode. The controller's actors become virtual actors
// ("grains") of a Proto.Actor cluster: one kind per actor kind, the
// identity being the volume ID, the node name, or "sync" for the one sync
// actor. The cluster places each identity on one member (rendezvous hash)
// and activates it on the first message; on any topology change the
// identities that move are stopped and activated again on their new owner.
// Nothing else changes: every actor rebuilds itself on Started from the
// store and the cloud, whatever member it runs on, and its writes are
// fenced (store.Fences) so that two activations of one identity, which the
// cluster can briefly run, cannot both act.
//
// Differences from embedded mode, all in this file and lookup.go:
//   - names resolve through Cluster.Get instead of local spawns;
//   - a grain is a child of the cluster's placement actor, so our
//     supervisor strategy does not apply to it; a panic is recovered by a
//     middleware that stops the grain instead, and the lookup's respawn
//     (after a growing delay) wakes it again through the cluster;
//   - a member re-wakes every identity after a topology change, so that the
//     actors of a member that died are activated again at once on the
//     survivors, not at their next message;
//   - node agents are not cluster members: each node actor learns its
//     agent's address from the sender of the agent's messages, and the
//     controller reaches an agent through its node actor.

// Cluster kinds of the controller's actors.
const (
	KindVolume = "volume"
	KindNode   = "node"
	KindSync   = "sync"
)

// agentRegistry remembers, per member, where each node's agent listens:
// the sender of the agent's last message to its node actor here.
type agentRegistry struct {
	mu  sync.Mutex
	pid map[cloud.NodeName]*actor.PID
}

// learn records pid for node and reports whether it is new.
func (r *agentRegistry) learn(node cloud.NodeName, pid *actor.PID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.pid[node]; old != nil && old.Equal(pid) {
		return false
	}
	if r.pid == nil {
		r.pid = map[cloud.NodeName]*actor.PID{}
	}
	r.pid[node] = pid
	return true
}

func (r *agentRegistry) get(node cloud.NodeName) *actor.PID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid[node]
}

// Kinds returns the cluster kinds of this controller's actors, for
// cluster.Configure. Call UseCluster with the cluster built from them
// before Start.
func (c *Controller) Kinds() []*cluster.Kind {
	e := c.env
	mw := append([]actor.ReceiverMiddleware{recoverGrain(e)}, e.cfg.Middleware...)
	opt := actor.WithReceiverMiddleware(mw...)
	return []*cluster.Kind{
		cluster.NewKind(KindVolume, actor.PropsFromProducer(func() actor.Actor { return &volumeActor{env: e} }, opt)),
		cluster.NewKind(KindNode, actor.PropsFromProducer(func() actor.Actor { return &nodeActor{env: e} }, opt)),
		cluster.NewKind(KindSync, actor.PropsFromProducer(func() actor.Actor { return newSyncActor(e) }, opt)),
	}
}

// UseCluster makes identities resolve through cl: from now on this
// controller's actors are cl's virtual actors. It must be called before
// Start, once. Lookups are cached (pidCache); Start has the cache follow
// the activations' ends and the topology (followActivations).
func (c *Controller) UseCluster(cl *cluster.Cluster) {
	e := c.env
	e.cluster = cl
	cache := newPIDCache(pidCacheTTL, time.Now)
	e.lookup.pids = cache
	e.lookup.resolve = func(name string) *actor.PID {
		pid, gen := cache.get(name)
		if pid != nil {
			return pid
		}
		kind, id := splitName(name)
		pid = cl.Get(id, kind)
		if pid == nil {
			// No owner answered (a member just died, or the cluster is
			// shutting down): the message goes to dead letters, and the
			// sender's retry, the respawn or the next topology change's
			// wake sends it again.
			e.log.WithField("actor", name).Warn("cluster: no activation for the identity")
			return actor.NewPID(e.sys.Address(), "unresolved/"+name)
		}
		cache.put(name, pid, gen)
		return pid
	}
}

// ResyncEvery resyncs, every d until the controller stops, the identities
// sel returns at that moment (ResyncWhere). A resync on every topology
// change and every new connection is not enough: a message lost while an
// identity moves (remote delivery is at most once, and a message to an
// activation being stopped is dropped) can leave a volume and its node
// waiting for each other until the next change. Observed: after every
// member lost its lease and joined again, one volume's move waited until
// the fleet stopped. Kubernetes' informers resync periodically for the
// same reason.
func (c *Controller) ResyncEvery(d time.Duration, sel func() func(kind, identity string) bool) {
	e := c.env
	go func() {
		for e.wait(d) {
			c.ResyncWhere(sel())
		}
	}()
}

// FollowActivations has the lookup cache follow the cluster: call it once
// the cluster started (Start calls it too; once is enough).
func (c *Controller) FollowActivations() { c.env.followActivations() }

// followActivations has the lookup cache follow, on the actor system's
// event stream, the activations that end and the topology. Subscribed
// once the cluster started, after its identity lookup (subscribers are
// told in order): a lookup after the cache is cleared for a new topology
// then asks the owner by that topology, never the one before.
func (e *env) followActivations() {
	cache := e.lookup.pids
	if cache == nil || e.pidSub != nil {
		return
	}
	e.pidSub = e.sys.EventStream.Subscribe(func(ev any) {
		switch m := ev.(type) {
		case *cluster.ClusterTopology:
			cache.clear()
		case *cluster.ActivationTerminated: // broadcast by the owner
			cache.stopped(identityName(m.ClusterIdentity), m.Pid)
		case *cluster.ActivationTerminating: // this member's own
			cache.stopped(identityName(m.ClusterIdentity), m.Pid)
		}
	})
}

// identityName is the actor name ("volume/v1") of a cluster identity.
func identityName(ci *cluster.ClusterIdentity) string {
	switch ci.GetKind() {
	case KindVolume:
		return volumePrefix + ci.GetIdentity()
	case KindNode:
		return nodePrefix + ci.GetIdentity()
	}
	return syncName
}

// splitName turns an actor name ("volume/v1", "node/n1", "sync") into its
// cluster kind and identity.
func splitName(name string) (kind, id string) {
	switch {
	case strings.HasPrefix(name, volumePrefix):
		return KindVolume, strings.TrimPrefix(name, volumePrefix)
	case strings.HasPrefix(name, nodePrefix):
		return KindNode, strings.TrimPrefix(name, nodePrefix)
	}
	return KindSync, syncName
}

// identity is the name of the actor behind ctx as embedded mode spells it
// ("volume/v1"): from its cluster identity when it is a grain, else from
// its process name.
func (e *env) identity(ctx actor.Context) string {
	if e.cluster != nil {
		if ci := cluster.GetClusterIdentity(ctx); ci != nil {
			return identityName(ci)
		}
	}
	return ctx.Self().Id
}

// recoverGrain stops a grain whose Receive panicked, instead of letting the
// placement actor's default strategy restart it at once: the lookup's
// respawn brings it back after a growing delay (see Config.Respawn).
func recoverGrain(e *env) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			defer func() {
				if r := recover(); r != nil {
					e.log.WithField("actor", c.Self().Id).Errorf("actor failed, stopping it (it comes back after a backoff): %v", r)
					if ctx, ok := c.(actor.Context); ok {
						ctx.Stop(ctx.Self())
					}
				}
			}()
			next(c, env)
		}
	}
}

// wakeAll wakes the sync actor and the actor of every node and volume of
// the store, wherever the cluster now places them (see UseCluster).
func (e *env) wakeAll() error {
	e.guard.Send(e.lookup.Sync(), wake)
	nodes, err := e.store.Nodes()
	if err != nil {
		return fmt.Errorf("controller: wake: %w", err)
	}
	e.each(len(nodes), func(i int) { e.guard.Send(e.lookup.Node(nodes[i].Name), wake) })
	vols, err := e.store.Volumes()
	if err != nil {
		return fmt.Errorf("controller: wake: %w", err)
	}
	e.each(len(vols), func(i int) { e.guard.Send(e.lookup.Volume(vols[i].ID), wake) })
	return nil
}

// resolvers bounds the sends each runs at once.
const resolvers = 32

// each runs f for 0..n-1: in one process in order; in distributed mode
// up to resolvers at once, for a send to an identity the cluster has not
// activated yet waits for its owner to answer (a remote round trip), and
// a fleet's apply told a thousand volumes one such wait after the other.
// Each identity is sent to once per call, so their order does not matter
// (and messages carry the store revision they were read at).
func (e *env) each(n int, f func(i int)) {
	limit := 1
	if e.cluster != nil {
		limit = resolvers
	}
	parallel.Do(n, limit, f)
}

// Resync tells every actor the store's state again, wherever the cluster
// now places it: each volume actor its desired nodes (volumes only node
// statuses still list, as deleted), each node actor to send its agent
// everything, and the sync actor a wake. Remote delivery is at most once:
// a message lost to a broken connection or a partition is never resent,
// and a volume actor that missed its desired state would keep it wrong for
// ever. It runs on its own goroutine, never blocks the caller, and
// coalesces: calls while one runs make one more run after it.
func (c *Controller) Resync() { c.ResyncWhere(nil) }

// ResyncWhere is Resync of the identities mine selects (nil: all).
// Bootstrap calls it on every topology change with the identities this
// member gained (their actors are then activated here at once, not at
// their next message), and whenever a connection to another process is
// (re)established (a healed partition) with every identity this member
// owns: each member resyncs its own, with local messages only, instead of
// every member all of them through remote.
func (c *Controller) ResyncWhere(mine func(kind, identity string) bool) {
	e := c.env
	if e.ctx.Err() != nil {
		return
	}
	e.resync.mu.Lock()
	defer e.resync.mu.Unlock()
	e.resync.add(mine)
	if e.resync.running {
		return
	}
	e.resync.running = true
	go func() {
		for {
			e.resync.mu.Lock()
			sel := e.resync.take()
			e.resync.mu.Unlock()
			start := e.clock.Now()
			if err := e.resyncAll(sel); err != nil && e.ctx.Err() == nil {
				e.log.Warnf("resync: %v", err)
			}
			e.resync.mu.Lock()
			if !e.resync.pending() || e.ctx.Err() != nil {
				e.resync.running = false
				e.resync.mu.Unlock()
				return
			}
			e.resync.mu.Unlock()
			// Paced: the next pass waits as long as this one took, so
			// resyncs take at most half of this member's store reads. A
			// loaded etcd makes leases lapse, each lapse changes the
			// topology, and back-to-back resyncs of every identity fed
			// that load (a fleet start of 10,000 volumes never settled).
			// What is asked meanwhile is in the next pass: it reads after
			// the wait.
			if !e.wait(e.clock.Now().Sub(start)) {
				e.resync.mu.Lock()
				e.resync.running = false
				e.resync.mu.Unlock()
				return
			}
		}
	}()
}

// wait returns after d on the controller's clock, or false at once if the
// controller stops first.
func (e *env) wait(d time.Duration) bool {
	if d <= 0 {
		return e.ctx.Err() == nil
	}
	done := make(chan struct{})
	t := e.clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-e.ctx.Done():
		return false
	}
}

// resyncState coalesces Resync calls: the selections asked since the
// last pass began are all in the next (any nil one: everything).
type resyncState struct {
	mu      sync.Mutex
	running bool
	all     bool
	sels    []func(kind, identity string) bool
}

func (r *resyncState) add(mine func(kind, identity string) bool) {
	if mine == nil {
		r.all, r.sels = true, nil
	} else if !r.all {
		r.sels = append(r.sels, mine)
	}
}

func (r *resyncState) pending() bool { return r.all || len(r.sels) > 0 }

// take returns the selection of the next pass and clears it; nil: all.
func (r *resyncState) take() func(kind, identity string) bool {
	all, sels := r.all, r.sels
	r.all, r.sels = false, nil
	if all {
		return nil
	}
	return func(kind, identity string) bool {
		for _, mine := range sels {
			if mine(kind, identity) {
				return true
			}
		}
		return false
	}
}

// resyncAll is one Resync of the identities sel selects (nil: all): range
// reads of the store, then a message per actor selected. The revision is
// read first, so that every message's data is at least as new as the
// revision it carries (see SetDesiredNodes).
func (e *env) resyncAll(sel func(kind, identity string) bool) error {
	if sel == nil {
		sel = func(string, string) bool { return true }
	}
	rev, err := e.store.Revision()
	if err != nil {
		return err
	}
	vols, err := e.store.Volumes()
	if err != nil {
		return err
	}
	ws, err := e.store.Workloads()
	if err != nil {
		return err
	}
	sts, err := e.store.NodeStatuses()
	if err != nil {
		return err
	}
	nodes, err := e.store.Nodes()
	if err != nil {
		return err
	}
	desired := desiredByVolume(ws)
	e.guard.Send(e.lookup.Sync(), wake)
	told := 0
	defer func() {
		e.log.WithFields(logrus.Fields{"told": told, "volumes": len(vols), "nodes": len(nodes)}).Debug("resync")
	}()
	var sends []func()
	known := make(map[cloud.VolumeID]bool, len(vols))
	for _, v := range vols {
		known[v.ID] = true
		if !sel(KindVolume, string(v.ID)) {
			continue
		}
		msg := &messages.SetDesiredNodes{VolumeId: string(v.ID), AccessMode: modeToProto(v.Mode),
			Nodes: desired[v.ID], Revision: rev, ObjectUid: v.ObjectUID}
		sends = append(sends, func() { e.guard.Send(e.lookup.Volume(v.ID), msg) })
	}
	leftover := func(v cloud.VolumeID) {
		if !known[v] {
			known[v] = true
			if !sel(KindVolume, string(v)) {
				return
			}
			msg := &messages.SetDesiredNodes{VolumeId: string(v), Deleted: true, Revision: rev}
			sends = append(sends, func() { e.guard.Send(e.lookup.Volume(v), msg) })
		}
	}
	for _, st := range sts {
		for v := range st.VolumesAttached {
			leftover(v)
		}
		for v := range st.VolumesDetaching {
			leftover(v)
		}
	}
	for _, n := range nodes {
		if sel(KindNode, string(n.Name)) {
			sends = append(sends, func() { e.guard.Send(e.lookup.Node(n.Name), &messages.AgentStarted{Node: string(n.Name)}) })
		}
	}
	told = len(sends)
	e.each(len(sends), func(i int) { sends[i]() })
	return nil
}

// agentFor is where messages for node's agent go: in embedded mode its
// fixed local name, if it runs; in distributed mode the address its node
// actor on this member learned. nil: nowhere. An agent not running gets
// nothing (a send would be a dead letter: a first start applies its nodes
// before their agents start); it asks for its state when it starts
// (AgentStarted).
func (e *env) agentFor(node cloud.NodeName) *actor.PID {
	if e.cluster == nil {
		if !e.guard.Exists(AgentPrefix + string(node)) {
			return nil
		}
		return e.lookup.Agent(node)
	}
	return e.agents.get(node)
}

// heardFromAgent records the sender of an agent's message to its node
// actor; a new address gets the node's whole state at once (the agent may
// have missed what was sent to an address this member did not know).
func (a *nodeActor) heardFromAgent(ctx actor.Context) {
	if a.env.cluster == nil || ctx.Sender() == nil {
		return
	}
	if a.env.agents.learn(a.name, ctx.Sender()) || !a.agentTold {
		a.agentTold = true
		a.sendWorkloads(ctx)
		a.PushStatus()
	}
}
