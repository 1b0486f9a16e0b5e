package ui

import (
	"context"
	"maps"
	"sync"

	"github.com/tether/tether/actors/events"
)

// fakeSource is a fleet a test makes up and changes, with an event
// channel the hub watches.
type fakeSource struct {
	mu    sync.Mutex
	nodes map[string]string
	vols  map[string]map[string]string
	evs   chan events.Event
	reads int // reads of any kind
}

func newFake() *fakeSource {
	return &fakeSource{nodes: map[string]string{}, vols: map[string]map[string]string{}, evs: make(chan events.Event, 100)}
}

func (f *fakeSource) setVol(id string, on map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vols[id] = on
}

func (f *fakeSource) setNode(name, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[name] = state
}

func (f *fakeSource) Nodes(context.Context) ([]NodeView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	var out []NodeView
	for n, s := range f.nodes {
		out = append(out, NodeView{Name: n, State: s})
	}
	return out, nil
}

func (f *fakeSource) Node(_ context.Context, name string) (NodeView, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	s, ok := f.nodes[name]
	return NodeView{Name: name, State: s}, ok, nil
}

func (f *fakeSource) Volumes(context.Context) ([]VolumeView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	var out []VolumeView
	for id, on := range f.vols {
		out = append(out, VolumeView{ID: id, On: maps.Clone(on)})
	}
	return out, nil
}

func (f *fakeSource) Volume(_ context.Context, id string) (VolumeView, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	on, ok := f.vols[id]
	return VolumeView{ID: id, On: maps.Clone(on)}, ok, nil
}

func (f *fakeSource) History(_ context.Context, kind events.Kind, name string) ([]events.Event, error) {
	return []events.Event{{Object: events.Ref{Kind: kind, Name: name}, Type: "Seen"}}, nil
}

func (f *fakeSource) Watch(ctx context.Context, fn func(events.Event)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-f.evs:
			fn(e)
		}
	}
}

func (f *fakeSource) Stats() Stats {
	return Stats{Calls: map[string]float64{"attach": 1}, InFlight: 2}
}
