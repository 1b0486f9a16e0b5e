package ui

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/tether/tether/actors/events"
)

// hub keeps one model of the fleet for every browser: it reads the
// Source whole when a browser comes, then only what events say changed
// (and sweeps the nodes, whose loss the cloud does not announce), and
// sends each browser a snapshot followed by the tiles that changed.
// While no browser watches it reads nothing: the model goes stale, and
// the next browser waits for a whole read. A browser that
// cannot keep up is cut off; its EventSource reconnects and gets a fresh
// snapshot, so a slow page never slows the hub.
type hub struct {
	now func() time.Time

	mu      sync.Mutex
	nodes   map[string]string            // node -> Node* state
	vols    map[string]map[string]string // volume -> node -> Vol* state (the source's)
	byNode  map[string]map[string]bool   // node -> volumes with a dot there
	refused map[string]map[string]bool   // volume -> nodes it was refused on (Multi-Attach)
	feed    []eventJSON                  // the newest events, oldest first
	notices []notice                     // the newest chaos notices
	stats   *statsJSON
	subs    map[*sub]bool

	dirtyVols, dirtyNodes map[string]bool
	wake                  chan struct{} // a dirty set was added to
	need                  chan struct{} // a browser waits for a fresh model
	stale                 bool          // reads stopped: no browser watched
	fresh                 chan struct{} // closed once the model is read after stale
}

// feedLen and noticeLen bound what a snapshot repeats of the past.
const (
	feedLen   = 100
	noticeLen = 100
	subBuffer = 4096 // frames a browser may lag behind before it is cut off
)

// sub is one browser's stream.
type sub struct {
	ch   chan []byte
	gone chan struct{} // closed when the hub cut it off
}

func newHub(now func() time.Time) *hub {
	return &hub{now: now, nodes: map[string]string{}, vols: map[string]map[string]string{},
		byNode: map[string]map[string]bool{}, refused: map[string]map[string]bool{}, subs: map[*sub]bool{},
		dirtyVols: map[string]bool{}, dirtyNodes: map[string]bool{}, wake: make(chan struct{}, 1),
		need: make(chan struct{}, 1), stale: true, fresh: make(chan struct{})}
}

// attach waits for a fresh model (asking the run loop for a whole read if
// it is stale), then subscribes.
func (h *hub) attach(ctx context.Context) (*sub, error) {
	h.mu.Lock()
	fresh := h.fresh
	h.mu.Unlock()
	select {
	case h.need <- struct{}{}:
	default: // already asked
	}
	select {
	case <-fresh:
		return h.subscribe(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// watched reports whether a browser watches; if none does, the model is
// marked stale (its reads stop).
func (h *hub) watched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) > 0 {
		return true
	}
	if !h.stale {
		h.stale, h.fresh = true, make(chan struct{})
	}
	return false
}

// isStale reports whether the model needs a whole read.
func (h *hub) isStale() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stale
}

// markFresh records a whole read and lets waiting browsers in.
func (h *hub) markFresh() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stale {
		h.stale = false
		close(h.fresh)
	}
}

// subscribe registers a browser and queues its snapshot first.
func (h *hub) subscribe() *sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &sub{ch: make(chan []byte, subBuffer), gone: make(chan struct{})}
	snap := snapshotJSON{Nodes: make([]tile, 0, len(h.nodes)), Feed: slices.Clip(h.feed), Notices: slices.Clip(h.notices), Stats: h.stats}
	if snap.Feed == nil {
		snap.Feed = []eventJSON{}
	}
	if snap.Notices == nil {
		snap.Notices = []notice{}
	}
	names := make([]string, 0, len(h.nodes))
	for n := range h.nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		snap.Nodes = append(snap.Nodes, h.tileLocked(n))
	}
	s.ch <- frame("snapshot", snap)
	h.subs[s] = true
	return s
}

func (h *hub) unsubscribe(s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
}

// sendLocked queues f to every browser, cutting off those that lag.
func (h *hub) sendLocked(f []byte) {
	for s := range h.subs {
		select {
		case s.ch <- f:
		default:
			delete(h.subs, s)
			close(s.gone)
		}
	}
}

// tileLocked draws node n.
func (h *hub) tileLocked(n string) tile {
	t := tile{N: n, S: h.nodes[n], V: make([][2]string, 0, len(h.byNode[n]))}
	for v := range h.byNode[n] {
		st := h.vols[v][n]
		if st == VolPending && h.refused[v][n] {
			st = VolRefused
		}
		t.V = append(t.V, [2]string{v, st})
	}
	slices.SortFunc(t.V, func(a, b [2]string) int {
		if a[0] < b[0] {
			return -1
		}
		if a[0] > b[0] {
			return 1
		}
		return 0
	})
	return t
}

// setVolumeLocked records v (deleted when !ok) and adds the nodes whose
// tiles it changed to touched.
func (h *hub) setVolumeLocked(id string, v VolumeView, ok bool, touched map[string]bool) {
	old := h.vols[id]
	for n, st := range old {
		if nv, still := v.On[n]; !ok || !still || nv != st {
			touched[n] = true
		}
		if !ok || v.On[n] == "" {
			delete(h.byNode[n], id)
		}
	}
	if !ok {
		delete(h.vols, id)
		delete(h.refused, id)
		return
	}
	for n, st := range v.On {
		if old[n] != st {
			touched[n] = true
		}
		if h.byNode[n] == nil {
			h.byNode[n] = map[string]bool{}
		}
		h.byNode[n][id] = true
		if st != VolPending && h.refused[id][n] {
			delete(h.refused[id], n) // it got there after all
		}
	}
	h.vols[id] = v.On
}

// setNodeLocked records n's state (deleted when !ok).
func (h *hub) setNodeLocked(name, state string, ok bool, touched map[string]bool) {
	old, had := h.nodes[name]
	switch {
	case !ok && had:
		delete(h.nodes, name)
		touched[name] = true
	case ok && (!had || old != state):
		h.nodes[name] = state
		touched[name] = true
	}
}

// sendTilesLocked sends the tiles of touched (a gone frame for a node
// that no longer exists).
func (h *hub) sendTilesLocked(touched map[string]bool) {
	for n := range touched {
		if _, ok := h.nodes[n]; ok {
			h.sendLocked(frame("tile", h.tileLocked(n)))
		} else {
			h.sendLocked(frame("gone", map[string]string{"n": n}))
		}
	}
}

// onEvent shows e in the feed and marks what it may have changed.
func (h *hub) onEvent(e events.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ej := eventOf(e)
	h.feed = append(h.feed, ej)
	if len(h.feed) > feedLen {
		h.feed = slices.Delete(h.feed, 0, len(h.feed)-feedLen)
	}
	h.sendLocked(frame("event", ej))
	switch e.Object.Kind {
	case events.KindVolume:
		if e.Type == "Multi-Attach" && e.Node != "" {
			if h.refused[e.Object.Name] == nil {
				h.refused[e.Object.Name] = map[string]bool{}
			}
			h.refused[e.Object.Name][e.Node] = true
			h.sendTilesLocked(map[string]bool{e.Node: true})
		}
		h.dirtyVols[e.Object.Name] = true
	case events.KindNode:
		h.dirtyNodes[e.Object.Name] = true
	}
	// A workload's events (mounts) change what its node reports in use:
	// its node's volumes are read again.
	if e.Object.Kind == events.KindWorkload && e.Node != "" {
		for v := range h.byNode[e.Node] {
			h.dirtyVols[v] = true
		}
	}
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// notice shows a chaos kill or fault.
func (h *hub) notice(kind, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := notice{Time: h.now().UTC().Format(time.RFC3339Nano), Kind: kind, Text: text}
	h.notices = append(h.notices, n)
	if len(h.notices) > noticeLen {
		h.notices = slices.Delete(h.notices, 0, len(h.notices)-noticeLen)
	}
	h.sendLocked(frame("notice", n))
}

// takeDirty returns and clears what events marked.
func (h *hub) takeDirty() (vols, nodes []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for v := range h.dirtyVols {
		vols = append(vols, v)
	}
	for n := range h.dirtyNodes {
		nodes = append(nodes, n)
	}
	clear(h.dirtyVols)
	clear(h.dirtyNodes)
	return vols, nodes
}
