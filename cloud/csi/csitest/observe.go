package csitest

// Observed: the driver's mutating calls heard in the order they change
// its state, for checkers that judge each change at the moment it
// happened (tether chaos --csi), and a hook on every answer (a reply
// lost after the effect).

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// Phase is when an Event was heard.
type Phase uint8

const (
	// Received: the call arrived, before Config.Before ran (a call the
	// driver will refuse is received all the same: what a CO asked).
	Received Phase = iota
	// Done: the driver handled the call; Before and After tell its
	// effect.
	Done
)

func (p Phase) String() string {
	if p == Received {
		return "received"
	}
	return "done"
}

// Mutating are the methods an Observed driver reports: the ones that
// change what is published to a node, staged on it or published there.
var Mutating = []string{"ControllerPublishVolume", "ControllerUnpublishVolume",
	"NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume", "NodeUnpublishVolume"}

// Event is one mutating call heard by an Observed driver.
type Event struct {
	Phase Phase
	// Seq numbers the call (CallSeq): its Received and Done events
	// share it.
	Seq  uint64
	Time time.Time
	// Call is the call as Calls logs it (Method, Volume, Node: the
	// request's node ID or the serving node's, Path).
	Call Call
	// Done only. Before and After are what the call is about, sorted,
	// just before the driver handled it and right after: the nodes the
	// volume is published to (controller calls), or its staging paths
	// (stage, unstage) or targets (publish, unpublish) on the node.
	// Before is nil unless Applied.
	Before, After []string
	// Applied: Config.Before let the call through to the driver's state
	// (which may still have refused it: Err).
	Applied bool
	Err     error // the driver's answer, before Hooks.Reply
}

// Holds reports whether e's After lists s: the node, staging path or
// target the call was about holds it after the call.
func (e Event) Holds(s string) bool { return slices.Contains(e.After, s) }

// Hooks observe an Observed driver and change its answers.
type Hooks struct {
	// Observe hears every mutating call twice (Received, Done), one
	// event at a time, under the lock that orders the calls' effects:
	// the Done events come in the order the driver changed its state,
	// none between a change and its event. It must not block, nor call
	// the driver.
	Observe func(Event)
	// Reply, if set, runs once a mutating call was handled, with the
	// driver's answer, outside that lock; what it returns is the
	// caller's answer (a reply lost after the effect: an error for a
	// call that took effect). ctx is the call's, as Config.Before saw it
	// (CallSeq works on it).
	Reply func(ctx context.Context, c Call, err error) error
}

// Observed is a Driver whose mutating calls (Mutating) are heard by
// Hooks in the order they change its state: a call holds a lock from
// the moment Config.Before lets it through until its Done event, so the
// driver applies them one at a time (Before itself, which may block,
// runs outside it). Serve it with its own Listen, Serve or NewServer
// (the Driver's own do not observe). Its direct changes (Publish,
// Unpublish, AddVolume) are not heard.
type Observed struct {
	*Driver
	hooks Hooks
	mu    sync.Mutex // orders the mutating calls' effects and their events
	seq   atomic.Uint64
}

// NewObserved returns a fake driver of cfg with no volumes, observed by
// h. cfg.Before still runs first in every call.
func NewObserved(cfg Config, h Hooks) *Observed {
	o := &Observed{hooks: h}
	user := cfg.Before
	cfg.Before = func(ctx context.Context, method string) error {
		if user != nil {
			if err := user(ctx, method); err != nil {
				return err
			}
		}
		o.enter(ctx, method)
		return nil
	}
	o.Driver = New(cfg)
	return o
}

// callToken follows one mutating call from the interceptor through
// Config.Before to its Done event.
type callToken struct {
	seq    uint64
	call   Call
	locked bool     // Before let it through: it holds o.mu
	before []string // what it is about then
}

type tokenKey struct{}

// CallSeq is the number of the mutating call whose context ctx is (as
// Config.Before and Hooks.Reply get it), 0 for any other: a fault hook
// can follow one call from Before to Reply.
func CallSeq(ctx context.Context) uint64 {
	if t, ok := ctx.Value(tokenKey{}).(*callToken); ok {
		return t.seq
	}
	return 0
}

// enter takes the lock for the call of ctx once Before let it through.
func (o *Observed) enter(ctx context.Context, method string) {
	t, ok := ctx.Value(tokenKey{}).(*callToken)
	if !ok || t.call.Method != method || t.locked {
		return
	}
	o.mu.Lock()
	t.locked, t.before = true, o.about(t.call)
}

// about is what c is about in the driver's state now (Event.Before).
func (o *Observed) about(c Call) []string {
	d := o.Driver
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[c.Volume]
	switch {
	case v == nil:
		return nil
	case c.Method == "ControllerPublishVolume" || c.Method == "ControllerUnpublishVolume":
		return d.publishedTo(c.Volume)
	case c.Method == "NodeStageVolume" || c.Method == "NodeUnstageVolume":
		return sortedKeys(v.staged[c.Node])
	}
	return sortedKeys(v.targets[c.Node])
}

// intercept observes the mutating calls of the server of node nodeID
// ("": the controller's).
func (o *Observed) intercept(nodeID string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		c, ok := mutatingCall(req, nodeID)
		if !ok {
			return handler(ctx, req)
		}
		t := &callToken{seq: o.seq.Add(1), call: c}
		o.mu.Lock()
		o.observe(Event{Phase: Received, Seq: t.seq, Call: c})
		o.mu.Unlock()
		ctx = context.WithValue(ctx, tokenKey{}, t)
		resp, err := o.handle(ctx, t, req, handler)
		if o.hooks.Reply != nil {
			if err = o.hooks.Reply(ctx, c, err); err != nil {
				resp = nil
			}
		}
		return resp, err
	}
}

// handle runs the handler, then reports the call Done under the lock
// (taken by enter, or here for a call Before stopped).
func (o *Observed) handle(ctx context.Context, t *callToken, req any, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if !t.locked {
			o.mu.Lock()
		}
		defer o.mu.Unlock()
		o.observe(Event{Phase: Done, Seq: t.seq, Call: t.call, Before: t.before, After: o.about(t.call), Applied: t.locked, Err: err})
	}()
	return handler(ctx, req)
}

// observe stamps e and hands it to Hooks.Observe; called under o.mu.
func (o *Observed) observe(e Event) {
	if o.hooks.Observe == nil {
		return
	}
	e.Time = time.Now()
	o.hooks.Observe(e)
}

// mutatingCall is req as Calls logs it, if it is a mutating call.
func mutatingCall(req any, nodeID string) (Call, bool) {
	switch r := req.(type) {
	case *spec.ControllerPublishVolumeRequest:
		return Call{Method: "ControllerPublishVolume", Volume: r.GetVolumeId(), Node: r.GetNodeId()}, true
	case *spec.ControllerUnpublishVolumeRequest:
		return Call{Method: "ControllerUnpublishVolume", Volume: r.GetVolumeId(), Node: r.GetNodeId()}, true
	case *spec.NodeStageVolumeRequest:
		return Call{Method: "NodeStageVolume", Volume: r.GetVolumeId(), Node: nodeID, Path: r.GetStagingTargetPath()}, true
	case *spec.NodeUnstageVolumeRequest:
		return Call{Method: "NodeUnstageVolume", Volume: r.GetVolumeId(), Node: nodeID, Path: r.GetStagingTargetPath()}, true
	case *spec.NodePublishVolumeRequest:
		return Call{Method: "NodePublishVolume", Volume: r.GetVolumeId(), Node: nodeID, Path: r.GetTargetPath(), Staging: r.GetStagingTargetPath()}, true
	case *spec.NodeUnpublishVolumeRequest:
		return Call{Method: "NodeUnpublishVolume", Volume: r.GetVolumeId(), Node: nodeID, Path: r.GetTargetPath()}, true
	}
	return Call{}, false
}
