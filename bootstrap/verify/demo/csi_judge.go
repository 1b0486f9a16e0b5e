package demo

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tether/tether/bootstrap/verify/chaos"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

// judgeCalls replays the fake driver's log of calls, in the order it
// received them, and finds each call that broke an ordering rule when it
// came:
//
//   - I1: ControllerPublishVolume of an exclusive volume to a node while
//     it is published to another;
//   - I2: ControllerUnpublishVolume from a node where the volume is still
//     staged or published at a target;
//   - I3: NodeStageVolume or NodePublishVolume on a node the volume is
//     not published to;
//   - CSI (the spec's order on a node): NodePublishVolume from a staging
//     path not staged, NodeUnstageVolume while published at a target.
//
// The log holds requests as they came, whatever the driver answered: a
// request that broke a rule counts even if the driver refused it (tether
// must not send it). ids maps tether's nodes to their node IDs.
func judgeCalls(calls []csitest.Call, modes map[cloud.VolumeID]cloud.AccessMode, ids map[cloud.NodeName]string) []chaos.Violation {
	names := map[string]cloud.NodeName{}
	for n, id := range ids {
		names[id] = n
	}
	j := callJudge{published: map[string]map[string]bool{}, staged: map[place]map[string]bool{}, targets: map[place]map[string]bool{}, history: map[string][]string{}}
	out := []chaos.Violation{}
	for i, c := range calls {
		j.history[c.Volume] = append(j.history[c.Volume], fmt.Sprintf("#%d %s", i+1, c))
		inv, detail := j.step(c, modes[cloud.VolumeID(c.Volume)] == cloud.Exclusive)
		if inv != "" {
			out = append(out, chaos.Violation{Invariant: inv, Volume: cloud.VolumeID(c.Volume), Node: names[c.Node],
				Detail: fmt.Sprintf("call #%d %s: %s", i+1, c.Method, detail), History: slices.Clone(j.history[c.Volume])})
		}
	}
	return out
}

// place is a volume on a node (by node ID).
type place struct{ vol, node string }

// callJudge is the driver's state as its calls made it.
type callJudge struct {
	published map[string]map[string]bool // volume -> node IDs
	staged    map[place]map[string]bool  // staging paths
	targets   map[place]map[string]bool  // target paths
	history   map[string][]string        // volume -> its calls so far
}

// step applies call c and returns the rule it broke, if any, and why.
func (j *callJudge) step(c csitest.Call, exclusive bool) (invariant, detail string) {
	at := place{c.Volume, c.Node}
	switch c.Method {
	case "ControllerPublishVolume":
		for other := range j.published[c.Volume] {
			if exclusive && other != c.Node {
				invariant, detail = "I1", fmt.Sprintf("exclusive volume published to %s while published to %s", c.Node, other)
			}
		}
		if j.published[c.Volume] == nil {
			j.published[c.Volume] = map[string]bool{}
		}
		j.published[c.Volume][c.Node] = true
	case "ControllerUnpublishVolume":
		if len(j.staged[at]) > 0 || len(j.targets[at]) > 0 {
			invariant, detail = "I2", fmt.Sprintf("unpublished from %s while staged at %v and published at %v there", c.Node, keys(j.staged[at]), keys(j.targets[at]))
		}
		delete(j.published[c.Volume], c.Node)
	case "NodeStageVolume":
		if !j.published[c.Volume][c.Node] {
			invariant, detail = "I3", "staged on "+c.Node+", which it is not published to"
		}
		add(j.staged, at, c.Path)
	case "NodePublishVolume":
		switch {
		case !j.published[c.Volume][c.Node]:
			invariant, detail = "I3", "published at a target on "+c.Node+", which it is not published to"
		case c.Staging != "" && !j.staged[at][c.Staging]:
			invariant, detail = "CSI", "published at a target from staging path "+c.Staging+", not staged"
		}
		add(j.targets, at, c.Path)
	case "NodeUnpublishVolume":
		delete(j.targets[at], c.Path)
	case "NodeUnstageVolume":
		if len(j.targets[at]) > 0 {
			invariant, detail = "CSI", fmt.Sprintf("unstaged while published at %v", keys(j.targets[at]))
		}
		delete(j.staged[at], c.Path)
	}
	return invariant, detail
}

func add(m map[place]map[string]bool, at place, path string) {
	if m[at] == nil {
		m[at] = map[string]bool{}
	}
	m[at][path] = true
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
