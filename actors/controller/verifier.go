package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/syncer"
	"github.com/tether/tether/cloud"
)

// The verifier: every volume actor's question "is this volume attached to
// these nodes?" (the start-up verify of a restore, and the single-node
// checks after a stale result) goes into one queue, and a pass answers all
// the questions queued when it starts with ONE VolumesAreAttached call per
// batch of instances, whatever the number of volumes. So a controller
// restart with V volumes on N nodes makes ceil(N / batch size) verify
// calls, not V, and a fleet start's new volumes share their verifies too.
//
// The start of a controller holds the first pass until every volume that
// Start spawns has asked (or startHold passed: a volume actor that failed
// to read the store asks later, after its restart): one pass serves the
// whole restore.
//
// A pass's AsOf is read before its first call and after every question it
// answers was asked, as a volume actor's own verify did: truth older than
// what the actor knew when it asked is never given.

// errNoListing answers every question when the cloud cannot say what is
// attached (cloud.ListingNone): nothing was asked.
var errNoListing = errors.New("the cloud cannot say what is attached (its listing is not to be believed): tether's records are the truth")

// startHold bounds how long the first pass waits for the volumes of Start.
const startHold = 10 * time.Second

// VerifyAnswer is the verifier's answer to one question.
type VerifyAnswer struct {
	Attached map[string]bool // node -> attached (every node asked, unless Err)
	AsOf     time.Time
	Err      error // the first failure among the calls covering the question
}

type verifyAsk struct {
	ctx   alive // the asker's lifetime: no answer once it ended
	vol   cloud.VolumeID
	nodes []cloud.NodeName
	reply func(VerifyAnswer)
}

type verifier struct {
	e    *env
	mu   sync.Mutex
	asks []*verifyAsk
	kick chan struct{}
	// expect: the volumes of Start that have not asked yet; the first
	// pass waits for them until holdUntil.
	expect    map[cloud.VolumeID]bool
	holdUntil time.Time
	holdTimer bool
	running   bool
	passes    int // passes made (tests)
}

func newVerifier(e *env) *verifier {
	return &verifier{e: e, kick: make(chan struct{}, 1)}
}

// hold makes the next pass wait for vols (Start's volumes) to ask.
func (v *verifier) hold(vols []cloud.VolumeID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.expect = make(map[cloud.VolumeID]bool, len(vols))
	for _, id := range vols {
		v.expect[id] = true
	}
	v.holdUntil = v.e.clock.Now().Add(startHold)
	v.holdTimer = false
}

// settled: vol of Start restored or stopped; the first pass no longer
// waits for it.
func (v *verifier) settled(vol cloud.VolumeID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.expect, vol)
	if len(v.expect) == 0 && v.running {
		defer v.poke()
	}
}

// ask queues a question; reply is called once, from the verifier's
// goroutine, unless ctx ends first (then maybe never).
func (v *verifier) ask(ctx alive, vol cloud.VolumeID, nodes []cloud.NodeName, reply func(VerifyAnswer)) {
	v.mu.Lock()
	v.asks = append(v.asks, &verifyAsk{ctx: ctx, vol: vol, nodes: nodes, reply: reply})
	delete(v.expect, vol)
	if !v.running {
		v.running = true
		go v.loop()
	}
	v.mu.Unlock()
	v.poke()
}

func (v *verifier) poke() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// loop runs passes while questions are queued, then ends (ask starts it
// again): no goroutine outlives the work.
func (v *verifier) loop() {
	for {
		batch, wait := v.take()
		if wait {
			select {
			case <-v.kick:
			case <-v.e.ctx.Done():
				v.mu.Lock()
				v.running = false
				v.mu.Unlock()
				return
			}
			continue
		}
		if batch == nil {
			return // v.running was cleared under mu
		}
		v.pass(batch)
	}
}

// take returns the questions of the next pass, or wait if the start hold
// is still on, or nil (and the loop ends) if nothing is queued.
func (v *verifier) take() (batch []*verifyAsk, wait bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.e.ctx.Err() != nil {
		v.running = false
		return nil, false
	}
	if len(v.asks) == 0 {
		v.running = false
		return nil, false
	}
	if len(v.expect) > 0 {
		if now := v.e.clock.Now(); now.Before(v.holdUntil) {
			if !v.holdTimer {
				v.holdTimer = true
				clock.At(v.e.clock, v.holdUntil, v.poke)
			}
			return nil, true
		}
		v.expect = nil // held long enough: the late ones come in a later pass
	}
	batch, v.asks = v.asks, nil
	v.passes++
	return batch, false
}

// pass answers asks with one VolumesAreAttached call per batch of
// instances (at most SyncConcurrency in flight).
func (v *verifier) pass(asks []*verifyAsk) {
	e := v.e
	asOf := e.clock.Now()
	live := asks[:0]
	want := map[cloud.NodeName]map[cloud.VolumeID]bool{}
	for _, a := range asks {
		if a.ctx.Err() != nil {
			continue // that incarnation is gone
		}
		live = append(live, a)
		for _, n := range a.nodes {
			if want[n] == nil {
				want[n] = map[cloud.VolumeID]bool{}
			}
			want[n][a.vol] = true
		}
	}
	if len(live) == 0 {
		return
	}
	if e.listing == cloud.ListingNone {
		// Nothing to ask: the records are the truth (restore trusts the
		// node statuses and settles the journal's operations by
		// repeating them).
		for _, a := range live {
			if a.ctx.Err() == nil {
				a.reply(VerifyAnswer{AsOf: asOf, Err: errNoListing})
			}
		}
		return
	}
	// truth[n][vol], or failed[n] with the error of n's batch.
	truth := make(map[cloud.NodeName]map[cloud.VolumeID]bool, len(want))
	failed := map[cloud.NodeName]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, e.cfg.SyncConcurrency))
	for _, b := range syncer.Batches(sortedKeys(want), e.cloud.BatchSize()) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			got, bad := v.verifyBatch(b, want)
			mu.Lock()
			defer mu.Unlock()
			for n, m := range got {
				truth[n] = m
			}
			for n, err := range bad {
				failed[n] = err
			}
		}()
	}
	wg.Wait()
	for _, a := range live {
		ans := VerifyAnswer{Attached: make(map[string]bool, len(a.nodes)), AsOf: asOf}
		for _, n := range a.nodes {
			if err, ok := failed[n]; ok {
				ans.Err = err
				break
			}
			ans.Attached[string(n)] = truth[n][a.vol]
		}
		if a.ctx.Err() == nil {
			a.reply(ans)
		}
	}
}

// verifyBatch asks the cloud about one batch of nodes: which of the volumes
// wanted there are attached. Nodes no instance backs have nothing attached.
func (v *verifier) verifyBatch(batch []cloud.NodeName, want map[cloud.NodeName]map[cloud.VolumeID]bool) (map[cloud.NodeName]map[cloud.VolumeID]bool, map[cloud.NodeName]error) {
	e := v.e
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.CloudTimeout)
	defer cancel()
	got := map[cloud.NodeName]map[cloud.VolumeID]bool{}
	bad := map[cloud.NodeName]error{}
	// ask resolves nodes (again, if refresh) and asks the cloud about
	// them in one call; it returns the nodes whose answer says a volume
	// is not attached to a cached instance: the node may have a new
	// instance by now (instances.resolveFresh says why), so those are asked
	// once more, resolved afresh.
	ask := func(nodes []cloud.NodeName, refresh bool) (doubt []cloud.NodeName) {
		insts := e.inst.resolveFresh(ctx, nodes, refresh)
		query := map[cloud.InstanceID][]cloud.VolumeID{}
		byInst := map[cloud.InstanceID]cloud.NodeName{}
		for _, n := range nodes {
			inst, err := insts[n].inst, insts[n].err
			switch {
			case cloud.Classify(err) == cloud.KindNotFound:
				got[n] = map[cloud.VolumeID]bool{} // no instance backs the node: nothing attached there
				continue
			case err != nil:
				bad[n] = fmt.Errorf("resolve node %q: %w", n, err)
				continue
			}
			query[inst] = sortedKeys(want[n])
			byInst[inst] = n
		}
		if len(query) == 0 {
			return nil
		}
		res, err := e.cloud.VolumesAreAttached(ctx, query)
		for inst, n := range byInst {
			if err != nil {
				bad[n] = err
				continue
			}
			m := make(map[cloud.VolumeID]bool, len(query[inst]))
			all := true
			for _, vol := range query[inst] {
				m[vol] = res[inst][vol]
				all = all && m[vol]
			}
			if !all && insts[n].cached {
				doubt = append(doubt, n)
				continue
			}
			got[n] = m
		}
		return doubt
	}
	if doubt := ask(batch, false); len(doubt) > 0 {
		ask(doubt, true)
	}
	return got, bad
}
