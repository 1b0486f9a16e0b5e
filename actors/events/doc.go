// Package events keeps what an operator reads about an object (tether
// describe): Kubernetes-style events (SuccessfulAttachVolume, Multi-Attach,
// ...), the most recent ones per object, in memory. It never decides
// anything; actors record, operators and tests read.
//
// Memory is one process's view. What operators read is the durable log
// (Log, implemented by actors/store) that a Writer fills asynchronously
// from the Recorder (Persist): kept for a TTL (default 1 h, as Kubernetes
// does) and at most a bound per object, the same from every process of a
// cluster and after restarts. A log too slow or down loses events (they
// are counted, see Writer), never an actor's time.
//
// An object is a name and, since a name may be reused after a delete, an
// incarnation: the recorder of an event stamps the ObjectUID (actors/store)
// of the object it serves, readers ask for the current one, and a deleted
// incarnation is forgotten.
package events
