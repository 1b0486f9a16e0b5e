package ui

import (
	"context"

	"github.com/tether/tether/actors/events"
)

// Node states, as tiles are coloured.
const (
	NodeReady    = "ready"
	NodeNotReady = "notready" // the controller misses its heartbeats
	NodeLost     = "lost"     // its instance is not running in the cloud
)

// Volume states on a node, as dots are coloured. Refused (Multi-Attach)
// is the hub's, from the events: the controller keeps no such state.
const (
	VolPending   = "pending" // wanted on the node, no operation yet
	VolAttaching = "attaching"
	VolAttached  = "attached"
	VolMounted   = "mounted" // attached, and the node reports it in use
	VolUncertain = "uncertain"
	VolDetaching = "detaching"
	VolRefused   = "refused" // exclusive volume attached elsewhere (Multi-Attach)
)

// VolumeView is one volume as the controller sees it: its state on each
// node it is wanted on or attached to.
type VolumeView struct {
	ID string
	On map[string]string // node -> Vol* state
}

// NodeView is one node's state (Node* constant).
type NodeView struct {
	Name  string
	State string
}

// Stats is what the page shows beside the fleet: cumulative cloud calls
// by method (the page shows their rate) and operations in flight.
type Stats struct {
	Calls    map[string]float64
	InFlight float64
}

// Source is where the page's state comes from: the controller's view,
// the store's events and the metrics registry (controller.go), or a
// fleet a test makes up.
type Source interface {
	// Nodes reads every node's state.
	Nodes(ctx context.Context) ([]NodeView, error)
	// Volumes reads every volume; Volume one (ok false: no such volume).
	Volumes(ctx context.Context) ([]VolumeView, error)
	Volume(ctx context.Context, id string) (v VolumeView, ok bool, err error)
	// Node reads one node (ok false: no such node).
	Node(ctx context.Context, name string) (n NodeView, ok bool, err error)
	// History is the events of the current incarnation of one object
	// (kind volume, node or workload), oldest first.
	History(ctx context.Context, kind events.Kind, name string) ([]events.Event, error)
	// Watch calls fn with every event from now on, until ctx ends.
	Watch(ctx context.Context, fn func(events.Event)) error
	// Stats reads the counters now.
	Stats() Stats
}
