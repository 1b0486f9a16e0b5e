package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/actors/runtime/supervisor"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// Controller is the controller side of one tether process: it owns the
// actors and is the entry point for changes of the desired state. Desired
// state changes are written to the store first, then told to the volume
// actors, under one lock so that they arrive in the order they were made.
type Controller struct {
	env    *env
	mu     sync.Mutex
	cancel context.CancelFunc
	// validations counts the batches validated (under mu): Validations.
	validations int
}

// New builds a controller on sys. Nothing runs before Start.
func New(sys *actor.ActorSystem, cfg Config, p cloud.Provider, st store.Store, rec *events.Recorder) *Controller {
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Volume.CloudTimeout = cfg.CloudTimeout // fences wait out our own calls' bound
	e := &env{sys: sys, cfg: cfg, cloud: p, store: st, events: rec, inst: newInstances(p), log: cfg.Log, clock: cfg.Clock, ctx: ctx, guard: cfg.Guard, listing: cloud.ListingOf(p)}
	if e.guard == nil {
		e.guard = spawn.New(sys)
	}
	e.verify = newVerifier(e)
	e.calls = newCallQueue(cfg.CallWorkers)
	e.volumeCfg = cfg.Volume
	e.volumeCfg.Rand = newRand(0)
	scfg := cfg.Supervisor
	if scfg.Clock == nil {
		scfg.Clock = cfg.Clock
	}
	guardian := actor.WithGuardian(supervisor.NewStrategy(scfg))
	// One Props per kind, shared by every actor of it (100,000 volumes
	// must not carry 100,000 Props): an actor learns its identity from its
	// name when it starts.
	opts := []actor.PropsOption{guardian, actor.WithReceiverMiddleware(cfg.Middleware...)}
	if cfg.Dispatcher != nil {
		opts = append(opts, actor.WithDispatcher(cfg.Dispatcher))
	}
	if cfg.Mailbox != nil {
		opts = append(opts, actor.WithMailbox(cfg.Mailbox))
	}
	volumeProps := actor.PropsFromProducer(func() actor.Actor { return &volumeActor{env: e} }, opts...)
	nodeProps := actor.PropsFromProducer(func() actor.Actor { return &nodeActor{env: e} }, opts...)
	syncProps := actor.PropsFromProducer(func() actor.Actor { return newSyncActor(e) }, opts...)
	e.lookup = &localLookup{
		sys: sys, guard: e.guard, clock: cfg.Clock, respawn: cfg.Respawn, quiet: cfg.RespawnQuiet,
		retiring: map[string]bool{}, passive: map[string]bool{}, deaths: map[string]*death{}, timers: map[string]clock.Timer{}, spawned: map[string]bool{},
		props: func(name string) *actor.Props {
			switch {
			case strings.HasPrefix(name, volumePrefix):
				return volumeProps
			case strings.HasPrefix(name, nodePrefix):
				return nodeProps
			}
			return syncProps
		},
		wanted:    e.wanted,
		onRespawn: cfg.OnRespawn,
		observer:  cfg.Observer,
	}
	e.guard.SetDormancy(e.lookup)
	return &Controller{env: e, cancel: cancel}
}

// wanted says whether an actor that stopped on its own must come back.
func (e *env) wanted(name string, desiredOnly bool) bool {
	switch {
	case strings.HasPrefix(name, volumePrefix):
		id := cloud.VolumeID(strings.TrimPrefix(name, volumePrefix))
		if _, ok, err := e.store.Volume(id); ok || err != nil || desiredOnly {
			return ok || err != nil
		}
		sts, err := e.store.NodeStatuses()
		if err != nil {
			return true
		}
		for _, st := range sts {
			if _, ok := st.VolumesAttached[id]; ok || st.VolumesDetaching[id] {
				return true
			}
		}
		return false
	case strings.HasPrefix(name, nodePrefix):
		n := cloud.NodeName(strings.TrimPrefix(name, nodePrefix))
		_, ok, err := e.store.Node(n)
		return err != nil || ok
	}
	return true
}

// Lookup resolves identities to actors.
func (c *Controller) Lookup() Lookup { return c.env.lookup }

// Start spawns the sync actor and an actor for every node and volume the
// store knows; each rebuilds itself from the store and the cloud.
func (c *Controller) Start() error {
	e := c.env
	if e.cluster != nil {
		// Distributed mode: every member wakes every identity; the cluster
		// activates each on its owner. No member restores all volumes, so
		// neither the liveness wait nor the first verify pass waits for
		// them (each volume's start-up verify is still coalesced).
		e.followActivations()
		e.beginRestore(nil)
		return e.wakeAll()
	}
	e.lookup.Sync()
	nodes, err := e.store.Nodes()
	if err != nil {
		return fmt.Errorf("controller: start: %w", err)
	}
	vols, err := e.store.Volumes()
	if err != nil {
		return fmt.Errorf("controller: start: %w", err)
	}
	ids := make([]cloud.VolumeID, len(vols))
	for i, v := range vols {
		ids[i] = v.ID
	}
	// Every volume's snapshot and every agent's first message in one
	// read, before the actors that take them start (restore_handoff.go).
	e.handOff(ids, nodes)
	for _, n := range nodes {
		e.guard.Send(e.lookup.Node(n.Name), wake)
	}
	// Heartbeats count once these have restored (liveness.go): the node
	// actors spawned above started their clocks before the agents could
	// report, and the restore is bulk work.
	e.beginRestore(ids)
	e.verify.hold(ids) // one verify pass for the whole restore (verifier.go)
	for _, v := range vols {
		e.guard.Send(e.lookup.Volume(v.ID), wake)
	}
	return nil
}

// Stop stops every actor of the controller and waits for them (bounded by
// timeout). Cloud calls in flight are cancelled.
func (c *Controller) Stop(timeout time.Duration) error {
	e := c.env
	e.lookup.close()
	c.cancel()
	if e.pidSub != nil {
		e.sys.EventStream.Unsubscribe(e.pidSub)
	}
	var futures []*actor.Future
	for _, name := range e.lookup.names() {
		futures = append(futures, e.guard.StopFuture(actor.NewPID(e.sys.Address(), name)))
	}
	deadline := time.Now().Add(timeout)
	told := make(chan struct{})
	go func() { e.tells.Wait(); close(told) }()
	select {
	case <-told:
	case <-time.After(timeout): // a tell waiting on a dead member's identity; the process is going anyway
	}
	var errs []error
	for _, f := range futures {
		if _, err := f.Result(); err != nil && time.Now().After(deadline) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SyncNow starts a verification pass at once.
func (c *Controller) SyncNow() { c.env.guard.Send(c.env.lookup.Sync(), &messages.SyncNow{}) }

// VolumeStatus asks a volume actor for its state. A dormant volume (its
// actor passivated, settled, and nothing has woken it since) is answered
// from the store without waking it: settled means attached exactly where
// the store says, so a listing of a resting fleet wakes nothing.
func (c *Controller) VolumeStatus(id cloud.VolumeID, timeout time.Duration) (*messages.VolumeStatus, error) {
	if st, ok, err := c.dormantStatus(id); ok || err != nil {
		return st, err
	}
	res, err := c.env.guard.Request(c.env.lookup.Volume(id), &messages.GetVolumeStatus{}, timeout).Result()
	if err != nil {
		return nil, fmt.Errorf("controller: status of volume %q: %w", id, err)
	}
	return res.(*messages.VolumeStatus), nil
}

// NodeStatus asks a node actor for its status.
func (c *Controller) NodeStatus(name cloud.NodeName, timeout time.Duration) (*messages.NodeStatus, error) {
	res, err := c.env.guard.Request(c.env.lookup.Node(name), &messages.GetNodeStatus{}, timeout).Result()
	if err != nil {
		return nil, fmt.Errorf("controller: status of node %q: %w", name, err)
	}
	return res.(*messages.NodeStatus), nil
}

// Guard is the spawn guard of this controller's actor system: agents and
// anything else that spawns named actors or sends to them must use it.
func (c *Controller) Guard() *spawn.Guard { return c.env.guard }
