// Package dispatch is a Proto.Actor dispatcher (Pool) that runs mailboxes
// on goroutines it keeps, whose stacks have already grown, instead of a
// new goroutine per run; and a mailbox (Mailbox) whose queues cost
// nothing while empty. A Pool never queues a run behind another, so an
// actor that blocks starves no other, as with the default dispatcher.
//
// See docs/performance.md#benchmarks-of-the-parts-go-test--bench.
package dispatch
