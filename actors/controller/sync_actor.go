package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/events"
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
	// r is this incarnation's shell logic (sync_runner.go).
	r      *SyncRunner
	env    *env
	self   *actor.PID
	timer  timer
	sem    chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
}

func newSyncActor(e *env) actor.Actor {
	return &syncActor{env: e, sem: make(chan struct{}, max(1, e.cfg.SyncConcurrency))}
}

func (a *syncActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.self = ctx.Self()
		a.ctx, a.cancel = context.WithCancel(a.env.ctx)
		e := a.env
		// Pass numbers of this incarnation never match an earlier one's
		// answers still queued in the mailbox.
		a.r = NewSyncRunner(SyncRunnerConfig{Host: syncShell{a}, Store: e.store, Listing: e.listing, BatchSize: e.cloud.BatchSize(),
			Period: e.cfg.SyncPeriod, Log: e.log, Pass: incarnationBase()})
	case *actor.Restarting, *actor.Stopping:
		a.timer.stop()
		a.cancel()
	case *actor.Stopped:
		a.env.lookup.stopped(syncName)
	case *messages.Crash:
		panic("sync: crash requested: " + m.Reason)
	case *messages.Wake:
		a.timer.fired(a.env.clock.Now())
		a.r.Handle(m)
	case *messages.SyncNow, *messages.SyncNodes, *messages.SyncBatchFinished:
		a.r.Handle(m)
	}
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

// syncShell is the SyncHost of one incarnation of the sync actor.
type syncShell struct{ a *syncActor }

var _ SyncHost = syncShell{}

func (s syncShell) Now() time.Time { return s.a.env.clock.Now() }

func (s syncShell) SendVolume(v cloud.VolumeID, msg any) {
	e := s.a.env
	e.guard.Send(e.lookup.Volume(v), msg)
}

func (s syncShell) WakeAt(at time.Time) { s.a.timer.wakeAt(s.a.env, s.a.self, at) }

// Query runs on a goroutine of its own (query), at most SyncConcurrency
// at once.
func (s syncShell) Query(pass uint64, batch []cloud.NodeName) { go s.a.query(s.a.ctx, pass, batch) }

func (s syncShell) Record(obj events.Ref, typ string, node cloud.NodeName, warning bool, msg string) {
	s.a.env.record(obj, typ, string(node), warning, msg)
}

func (s syncShell) PassFinished(st *messages.SyncPassFinished, took time.Duration) {
	e := s.a.env
	e.sys.EventStream.Publish(st)
	if obs := e.cfg.Observer; obs != nil {
		obs.SyncPass(took, int(st.Calls), int(st.Errors))
	}
}
