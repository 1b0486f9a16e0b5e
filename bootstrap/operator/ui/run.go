package ui

import (
	"context"
	"sync"
	"time"

	"github.com/tether/tether/actors/events"
)

// run feeds h from src until ctx ends: the events from the start, and
// while a browser watches, what they name read again every tick, the
// nodes swept every nodeEvery, everything read again every fullEvery
// (what no event announced: a safety net), and stats every statsEvery.
// A browser arriving at a stale model gets a whole read first.
func (h *hub) run(ctx context.Context, src Source, o Options, logf func(string, ...any)) {
	var watching sync.WaitGroup
	defer watching.Wait() // Close returns with nothing of the hub left running
	watching.Add(1)
	go func() {
		defer watching.Done()
		for ctx.Err() == nil {
			if err := src.Watch(ctx, h.onEvent); err != nil && ctx.Err() == nil {
				logf("ui: watching events: %v (again in %v)", err, o.FullEvery)
				select {
				case <-ctx.Done():
				case <-time.After(o.FullEvery):
				}
			}
		}
	}()
	tick := time.NewTicker(o.Tick)
	defer tick.Stop()
	nodes := time.NewTimer(o.NodeEvery)
	defer nodes.Stop()
	full := time.NewTimer(o.FullEvery)
	defer full.Stop()
	stats := time.NewTicker(o.StatsEvery)
	defer stats.Stop()
	var last Stats
	lastAt := time.Now()
	// ready reads everything if the model is stale, and reports whether
	// a browser watches (nothing else is worth reading otherwise).
	ready := func() bool {
		if !h.watched() {
			return false
		}
		if h.isStale() {
			h.takeDirty() // the whole read covers them
			h.full(ctx, src, logf)
			h.markFresh()
		}
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.need:
			if h.isStale() {
				h.takeDirty()
				h.full(ctx, src, logf)
				h.markFresh()
			}
		case <-h.wake:
			// Gather what else arrives within a tick into one read.
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if ready() {
				h.refresh(ctx, src, logf)
			}
		case <-nodes.C:
			took := timed(func() {
				if ready() {
					h.sweepNodes(ctx, src, logf)
				}
			})
			nodes.Reset(max(o.NodeEvery, sweepShare*took))
		case <-full.C:
			took := timed(func() {
				if ready() {
					h.full(ctx, src, logf)
				}
			})
			full.Reset(max(o.FullEvery, sweepShare*took))
		case now := <-stats.C:
			if ready() {
				last = h.sendStats(src.Stats(), last, now.Sub(lastAt))
			} else {
				last = Stats{}
			}
			lastAt = now
		}
	}
}

// sweepShare spaces the sweeps by this many times their own length at
// least: on a fleet large enough for a sweep to take long, the page takes
// no more than a tenth of the controller's time for them.
const sweepShare = 10

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// full reads every node and volume, and sends what changed.
func (h *hub) full(ctx context.Context, src Source, logf func(string, ...any)) {
	h.sweepNodes(ctx, src, logf)
	vols, err := src.Volumes(ctx)
	if err != nil {
		logf("ui: reading the volumes: %v", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	touched := map[string]bool{}
	seen := make(map[string]bool, len(vols))
	for _, v := range vols {
		seen[v.ID] = true
		h.setVolumeLocked(v.ID, v, true, touched)
	}
	for id := range h.vols {
		if !seen[id] {
			h.setVolumeLocked(id, VolumeView{}, false, touched)
		}
	}
	h.sendTilesLocked(touched)
}

// sweepNodes reads every node's state.
func (h *hub) sweepNodes(ctx context.Context, src Source, logf func(string, ...any)) {
	nodes, err := src.Nodes(ctx)
	if err != nil {
		logf("ui: reading the nodes: %v", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	touched := map[string]bool{}
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		seen[n.Name] = true
		h.setNodeLocked(n.Name, n.State, true, touched)
	}
	for n := range h.nodes {
		if !seen[n] {
			h.setNodeLocked(n, "", false, touched)
		}
	}
	h.sendTilesLocked(touched)
}

// refresh reads again what events marked.
func (h *hub) refresh(ctx context.Context, src Source, logf func(string, ...any)) {
	vols, nodes := h.takeDirty()
	touched := map[string]bool{}
	for _, id := range vols {
		v, ok, err := src.Volume(ctx, id)
		if err != nil {
			logf("ui: reading volume %q: %v", id, err)
			continue
		}
		h.mu.Lock()
		h.setVolumeLocked(id, v, ok, touched)
		h.mu.Unlock()
	}
	for _, name := range nodes {
		n, ok, err := src.Node(ctx, name)
		if err != nil {
			logf("ui: reading node %q: %v", name, err)
			continue
		}
		h.mu.Lock()
		h.setNodeLocked(name, n.State, ok, touched)
		h.mu.Unlock()
	}
	h.mu.Lock()
	h.sendTilesLocked(touched)
	h.mu.Unlock()
}

// sendStats sends the calls per second since prev (over d) and returns
// cur for the next time.
func (h *hub) sendStats(cur, prev Stats, d time.Duration) Stats {
	s := &statsJSON{Calls: map[string]float64{}, InFlight: cur.InFlight}
	for m, n := range cur.Calls {
		s.Total += n
		if d > 0 && prev.Calls != nil {
			s.Calls[m] = (n - prev.Calls[m]) / d.Seconds()
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats = s
	h.sendLocked(frame("stats", s))
	return cur
}

// history is the events of one object for the page's side panel.
func history(ctx context.Context, src Source, kind, name string) ([]eventJSON, error) {
	evs, err := src.History(ctx, events.Kind(kind), name)
	if err != nil {
		return nil, err
	}
	out := make([]eventJSON, len(evs))
	for i, e := range evs {
		out[i] = eventOf(e)
	}
	return out, nil
}
