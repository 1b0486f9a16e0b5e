package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/syncer"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// syncActor owns the verification ticker. Every SyncPeriod it reads what
// the node statuses believe attached, asks the cloud what each instance has
// in ONE call per batch of nodes (at most SyncConcurrency calls in flight),
// and tells each volume actor the truth about the differences. A failed
// call changes nothing: the belief is kept and the error logged and counted.
//
// Between periodic passes, SyncNodes asks for a few nodes at once (an agent
// came back: its machine may have lost attachments). Those nodes are
// verified in a partial pass as soon as no pass is in flight: the asks
// that arrive meanwhile share one, in ceil(nodes/batch) calls. A partial
// pass does not delay the periodic one (the timer keeps the earliest wake).
type syncActor struct {
	env      *env
	self     *actor.PID
	timer    timer
	sem      chan struct{}
	pass     uint64
	inflight int
	rerun    bool
	// asked: nodes SyncNodes asked for that no pass started since has
	// covered; partial: the pass in flight is over such nodes only.
	asked    map[cloud.NodeName]bool
	partial  bool
	believed map[cloud.NodeName]map[cloud.VolumeID]string // node -> volume -> device path
	stats    *messages.SyncPassFinished
	// extras: attachments a ListingMayOverstate cloud listed that no node
	// status has, reported once (extra.go), by the pass that last saw
	// them; a full pass that no longer sees one forgets it.
	extras  map[extraKey]uint64
	ctx     context.Context
	cancel  context.CancelFunc
	started time.Time
}

func newSyncActor(e *env) actor.Actor {
	return &syncActor{env: e, sem: make(chan struct{}, max(1, e.cfg.SyncConcurrency))}
}

func (a *syncActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.self = ctx.Self()
		// Pass numbers of this incarnation never match an earlier one's
		// answers still queued in the mailbox.
		a.pass = incarnationBase()
		a.ctx, a.cancel = context.WithCancel(a.env.ctx)
		a.timer.wakeAt(a.env, a.self, a.env.clock.Now().Add(a.env.cfg.SyncPeriod))
	case *actor.Restarting, *actor.Stopping:
		a.timer.stop()
		a.cancel()
	case *actor.Stopped:
		a.env.lookup.stopped(syncName)
	case *messages.Crash:
		panic("sync: crash requested: " + m.Reason)
	case *messages.Wake:
		a.timer.fired(a.env.clock.Now())
		a.start()
	case *messages.SyncNow:
		a.start()
	case *messages.SyncNodes:
		a.ask(m.Nodes)
	case *messages.SyncBatchFinished:
		a.onBatch(ctx, m)
	}
}

// start starts a pass over every node, or, with one in flight, has one
// follow it.
func (a *syncActor) start() {
	if a.inflight > 0 {
		a.rerun = true
		return
	}
	a.asked = nil // every node is in this pass
	a.begin(nil)
}

// ask notes nodes to verify now, and starts a partial pass over them
// unless a pass is in flight (its end starts it then).
func (a *syncActor) ask(nodes []string) {
	if len(nodes) == 0 {
		return
	}
	if a.asked == nil {
		a.asked = map[cloud.NodeName]bool{}
	}
	for _, n := range nodes {
		a.asked[cloud.NodeName(n)] = true
	}
	if a.inflight == 0 {
		a.startAsked()
	}
}

// startAsked starts a partial pass over the nodes asked for.
func (a *syncActor) startAsked() {
	only := sortedKeys(a.asked)
	a.asked = nil
	a.begin(only)
}

// begin starts a pass: over every node if only is nil, else over those of
// only that are known (a partial pass).
func (a *syncActor) begin(only []cloud.NodeName) {
	a.pass++
	a.started = a.env.clock.Now()
	a.partial = only != nil
	a.stats = &messages.SyncPassFinished{Pass: a.pass, StartedUnixNano: a.started.UnixNano(), Partial: a.partial}
	if a.env.listing == cloud.ListingNone {
		// The cloud cannot tell: nothing to compare the records with,
		// nothing read, nothing asked.
		a.finish()
		return
	}
	nodes, err := a.readBelief(only)
	if err != nil {
		a.env.log.Errorf("sync: reading node statuses: %v", err)
		a.schedule() // a partial pass's nodes wait for the periodic one
		return
	}
	a.stats.Nodes = int32(len(nodes))
	batches := syncer.Batches(nodes, a.env.cloud.BatchSize())
	a.inflight = len(batches)
	if a.inflight == 0 {
		a.finish()
		return
	}
	for _, b := range batches {
		go a.query(a.ctx, a.pass, b)
	}
}

// readBelief snapshots VolumesAttached of every known node, or of those
// of only (if not nil).
func (a *syncActor) readBelief(only []cloud.NodeName) ([]cloud.NodeName, error) {
	if only != nil {
		return a.readSome(only)
	}
	statuses, err := a.env.store.NodeStatuses()
	if err != nil {
		return nil, err
	}
	specs, err := a.env.store.Nodes()
	if err != nil {
		return nil, err
	}
	a.believed = map[cloud.NodeName]map[cloud.VolumeID]string{}
	for _, s := range specs {
		a.believed[s.Name] = map[cloud.VolumeID]string{}
	}
	for _, st := range statuses {
		a.believed[st.Name] = st.VolumesAttached
	}
	return sortedKeys(a.believed), nil
}

// readSome is readBelief for the nodes of only, read one by one: a node
// is known by its status or, without one, by its spec.
func (a *syncActor) readSome(only []cloud.NodeName) ([]cloud.NodeName, error) {
	a.believed = map[cloud.NodeName]map[cloud.VolumeID]string{}
	for _, n := range only {
		st, ok, err := a.env.store.NodeStatus(n)
		if err != nil {
			return nil, err
		}
		if ok {
			a.believed[n] = st.VolumesAttached
			continue
		}
		if _, ok, err := a.env.store.Node(n); err != nil {
			return nil, err
		} else if ok {
			a.believed[n] = map[cloud.VolumeID]string{}
		}
	}
	return sortedKeys(a.believed), nil
}

// query runs on its own goroutine: one InstanceVolumes call for the batch
// (and one more for its nodes whose cached instance was gone).
func (a *syncActor) query(c context.Context, pass uint64, batch []cloud.NodeName) {
	a.sem <- struct{}{}
	defer func() { <-a.sem }()
	e := a.env
	res := &messages.SyncBatchFinished{Pass: pass, Actual: map[string]*messages.NodeVolumes{}, AsOfUnixNano: e.clock.Now().UnixNano()}
	ctx, cancel := context.WithTimeout(c, e.cfg.CloudTimeout)
	defer cancel()
	listBatch(ctx, e, batch, res)
	if c.Err() != nil {
		return // this incarnation is gone; see volumeShell.SendSelf
	}
	e.guard.Send(a.self, res)
}

// listBatch fills res with what the cloud has attached to each node of
// batch: one InstanceVolumes call, and one more for the nodes whose
// cached instance was gone, resolved afresh.
func listBatch(ctx context.Context, e *env, batch []cloud.NodeName, res *messages.SyncBatchFinished) {
	failed := func(n cloud.NodeName, err error) {
		res.FailedNodes = append(res.FailedNodes, string(n))
		res.Error = err.Error()
	}
	// ask resolves nodes (again, if refresh), lists their instances'
	// volumes in one call, and returns the nodes whose cached instance
	// was gone: they are asked once more, resolved afresh (a replaced
	// machine's node has a new instance; instances.resolveFresh says why).
	ask := func(nodes []cloud.NodeName, refresh bool) (gone []cloud.NodeName) {
		resolved := e.inst.resolveFresh(ctx, nodes, refresh)
		byInst := map[cloud.InstanceID]cloud.NodeName{}
		var insts []cloud.InstanceID
		for _, n := range nodes {
			inst, err := resolved[n].inst, resolved[n].err
			switch {
			case cloud.Classify(err) == cloud.KindNotFound:
				res.Actual[string(n)] = &messages.NodeVolumes{} // no instance: nothing attached
			case err != nil:
				failed(n, fmt.Errorf("resolve node %q: %w", n, err))
			default:
				byInst[inst] = n
				insts = append(insts, inst)
			}
		}
		if len(insts) == 0 {
			return nil
		}
		got, err := e.cloud.InstanceVolumes(ctx, insts)
		for inst, n := range byInst {
			if err != nil {
				failed(n, err)
				e.inst.forget(n, err)
				continue
			}
			vols, exists := got[inst]
			if !exists {
				// The instance is gone (deleted, or its node replaced):
				// the next call for n resolves n again instead of naming
				// a dead instance. Nothing is attached to it, but that
				// says nothing of n if the instance came from the cache.
				e.inst.drop(n, inst)
				// An instance the cloud named in this pass is another
				// matter: a volume attached to a later instance of n was
				// attached by its actor after this pass began, and the
				// pass's AsOf tells that actor the finding predates it.
				if resolved[n].cached {
					gone = append(gone, n)
					continue
				}
			}
			nv := &messages.NodeVolumes{Volumes: map[string]string{}}
			for v, dev := range vols {
				nv.Volumes[string(v)] = dev
			}
			res.Actual[string(n)] = nv
		}
		return gone
	}
	if gone := ask(batch, false); len(gone) > 0 {
		ask(gone, true)
	}
}

func (a *syncActor) onBatch(ctx actor.Context, m *messages.SyncBatchFinished) {
	if m.Pass != a.pass || a.inflight == 0 {
		return
	}
	a.inflight--
	a.stats.Calls++
	if m.Error != "" {
		a.stats.Errors++
		a.env.log.WithField("nodes", m.FailedNodes).Warnf("sync: cloud query failed, keeping what we believe: %s", m.Error)
	}
	actual := map[cloud.NodeName]map[cloud.VolumeID]string{}
	for n, nv := range m.Actual {
		vols := map[cloud.VolumeID]string{}
		for v, dev := range nv.Volumes {
			vols[cloud.VolumeID(v)] = dev
		}
		actual[cloud.NodeName(n)] = vols
	}
	for _, f := range syncer.Compare(a.believed, actual) {
		if f.Attached && !f.Moved && a.env.listing == cloud.ListingMayOverstate {
			a.extra(f)
			continue
		}
		if f.Moved {
			a.stats.Moved++
		} else if f.Attached {
			a.stats.Dangling++
		} else {
			a.stats.Lost++
		}
		a.env.guard.Send(a.env.lookup.Volume(f.Volume), &messages.AttachmentVerified{VolumeId: string(f.Volume), Node: string(f.Node),
			Attached: f.Attached, DevicePath: f.DevicePath, AsOfUnixNano: m.AsOfUnixNano})
	}
	if a.inflight == 0 {
		a.finish()
	}
}

func (a *syncActor) finish() {
	st := a.stats
	if !a.partial {
		a.forgetExtras(st.Pass)
	}
	a.env.sys.EventStream.Publish(st)
	if obs := a.env.cfg.Observer; obs != nil {
		obs.SyncPass(a.env.clock.Now().Sub(a.started), int(st.Calls), int(st.Errors))
	}
	a.env.log.WithField("pass", st.Pass).Debugf("sync: %d nodes, %d calls, %d errors, %d lost, %d unknown attachments", st.Nodes, st.Calls, st.Errors, st.Lost, st.Dangling)
	if a.rerun {
		a.rerun = false
		a.start()
		return
	}
	a.schedule() // after a partial pass: the periodic wake pending keeps its time
	if len(a.asked) > 0 {
		a.startAsked()
	}
}

func (a *syncActor) schedule() {
	a.timer.wakeAt(a.env, a.self, a.env.clock.Now().Add(a.env.cfg.SyncPeriod))
}
