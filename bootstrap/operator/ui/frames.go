package ui

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tether/tether/actors/events"
)

// What the page receives over server-sent events, one JSON document per
// frame, named by the frame's event field:
//
//	snapshot  {nodes: [tile...], feed: [event...], notices: [notice...]}: first, once
//	tile      one node's tile, whole, when it changed
//	gone      {n: node}: the node was deleted
//	event     one new event (the live feed)
//	stats     {calls: {method: per second}, inflight: n}
//	notice    {kind, text}: a chaos kill or fault as it happens

// tile is one node as drawn: its state and its volumes' dots, in name
// order, each [volume, state].
type tile struct {
	N string      `json:"n"`
	S string      `json:"s"`
	V [][2]string `json:"v"`
}

type eventJSON struct {
	Time    string `json:"t"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Type    string `json:"type"`
	Node    string `json:"node,omitempty"`
	Warning bool   `json:"warning,omitempty"`
	Message string `json:"msg"`
}

func eventOf(e events.Event) eventJSON {
	return eventJSON{Time: e.Time.UTC().Format(time.RFC3339Nano), Kind: string(e.Object.Kind), Name: e.Object.Name,
		Type: e.Type, Node: e.Node, Warning: e.Warning, Message: e.Message}
}

type notice struct {
	Time string `json:"t"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

type statsJSON struct {
	Calls    map[string]float64 `json:"calls"` // per second since the last frame
	Total    float64            `json:"total"` // calls ever
	InFlight float64            `json:"inflight"`
}

type snapshotJSON struct {
	Nodes   []tile      `json:"nodes"`
	Feed    []eventJSON `json:"feed"`
	Notices []notice    `json:"notices"`
	Stats   *statsJSON  `json:"stats,omitempty"`
}

// frame encodes one server-sent event. JSON never holds a raw newline,
// so data fits on one line.
func frame(name string, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // only our own types: cannot happen
		panic(fmt.Sprintf("ui: encoding %s: %v", name, err))
	}
	out := make([]byte, 0, len(b)+len(name)+16)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, "\ndata: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}
