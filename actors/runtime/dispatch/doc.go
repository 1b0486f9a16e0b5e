// Package dispatch is a Proto.Actor dispatcher that runs mailboxes on
// goroutines it keeps, instead of a new goroutine per run.
//
// Proto.Actor's default dispatcher starts a goroutine each time an idle
// mailbox gets a message (go fn()). A goroutine starts with a small stack,
// and an actor's Receive (JSON, bbolt, the cores) grows it two or three
// times, copying it each time: in a CPU profile of a 30,000-volume fleet
// start, runtime.copystack alone was 9% of all CPU. A Pool hands a
// mailbox run to a worker that is idle and whose stack has already grown;
// only when none is idle does it start one, so it never queues a run
// behind another (an actor that blocks cannot starve the others, exactly
// as with the default dispatcher). At most MaxIdle workers wait for work;
// the others end when their run is done.
package dispatch
