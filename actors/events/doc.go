// Package events keeps what an operator reads about an object (tether
// describe): Kubernetes-style events (SuccessfulAttachVolume,
// Multi-Attach, ...), the most recent per object in memory (Recorder),
// and a Writer that persists them asynchronously (Persist) to a durable
// Log (actors/store), kept for a TTL (1 h by default, as Kubernetes does)
// and a bound per object, the same from every process and after restarts.
//
// It never decides anything: actors record, operators and tests read. A
// log too slow or down loses events (counted), never an actor's time.
// Events name their object's incarnation (ObjectUID), so a reused name
// never shows a deleted incarnation's events.
//
// See docs/operating.md#events-tether-get-events.
package events
