package events

import (
	"math"
	"strings"
	"time"
)

// record is an Event as the Recorder keeps it: 64 bytes instead of an
// Event's 128. The object's kind and name are its map's and key's (not
// repeated per record), the time is nanoseconds (no location, no
// monotonic reading: readers only ever asked for UnixNano), the type a
// number (types). Strings are the recorder's callers': a record copies no
// bytes.
type record struct {
	nanos   int64 // Time.UnixNano, or noTime for the zero Time
	uid     string
	node    string
	message string
	typ     uint32 // in types
	warning bool
}

// noTime stands for the zero Time, whose UnixNano is not defined.
const noTime = math.MinInt64

func toRecord(e Event, typ uint32) record {
	nanos := int64(noTime)
	if !e.Time.IsZero() {
		nanos = e.Time.UnixNano()
	}
	return record{nanos: nanos, uid: e.Object.UID, node: e.Node, message: e.Message, typ: typ, warning: e.Warning}
}

// event rebuilds the Event of an object of kind k named name.
func (r record) event(k Kind, name string, ts *types) Event {
	var t time.Time
	if r.nanos != noTime {
		t = time.Unix(0, r.nanos)
	}
	return Event{Time: t, Object: Ref{Kind: k, Name: name, UID: r.uid}, Type: ts.names[r.typ], Node: r.node, Warning: r.warning, Message: r.message}
}

// appendBounded appends rec to list, dropping the oldest records beyond
// limit. It grows list as append does, but never past limit: an object
// with one event holds one record, and one at the limit, limit records.
func appendBounded(list []record, rec record, limit int) []record {
	switch {
	case len(list) >= limit:
		n := copy(list, list[len(list)-limit+1:])
		clear(list[n+1:])
		list = list[:n+1]
		list[n] = rec
		return list
	case len(list) == cap(list):
		grown := make([]record, len(list), min(max(2*len(list), 1), limit))
		copy(grown, list)
		list = grown
	}
	return append(list, rec)
}

// objects holds the records of each name, by kind: the names of a kind
// share a map keyed by the name alone, and the history of a name is one
// list, whatever its incarnations. A kind whose names are all
// forgotten is dropped, with what its map had grown to.
type objects []kindObjects

type kindObjects struct {
	kind  Kind
	names map[string][]record
}

// of returns the map of kind k; nil if it has none, unless create.
func (o *objects) of(k Kind, create bool) map[string][]record {
	for _, ko := range *o {
		if ko.kind == k {
			return ko.names
		}
	}
	if !create {
		return nil
	}
	m := map[string][]record{}
	*o = append(*o, kindObjects{kind: k, names: m})
	return m
}

// dropEmpty drops the map of kind k if it holds no name.
func (o *objects) dropEmpty(k Kind) {
	for i, ko := range *o {
		if ko.kind == k && len(ko.names) == 0 {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

// types numbers the event types (a handful of constants: a record holds
// the number) and counts the events of each.
type types struct {
	names  []string
	ids    map[string]uint32
	counts []int
}

func newTypes() types { return types{ids: map[string]uint32{}} }

// count counts one event of type typ and returns its number.
func (t *types) count(typ string) uint32 {
	id, ok := t.ids[typ]
	if !ok {
		id = uint32(len(t.names))
		typ = strings.Clone(typ) // kept for good: not a caller's larger string
		t.names, t.counts = append(t.names, typ), append(t.counts, 0)
		t.ids[typ] = id
	}
	t.counts[id]++
	return id
}

// total returns how many events of type typ were counted.
func (t *types) total(typ string) int {
	if id, ok := t.ids[typ]; ok {
		return t.counts[id]
	}
	return 0
}
