// Package supervisor owns how tether restarts failed actors: an
// actor.SupervisorStrategy (NewStrategy) that restarts a failing child
// after a true exponential backoff (package backoff's curve, with jitter),
// on an injected clock, and forgets its failures once it has run for a
// quiet period. It never stops a child and never escalates, so it is safe
// as a guardian (Proto.Actor panics when a guardian escalates), and a
// broken dependency makes an actor retry slowly rather than disappear.
//
// See docs/design.md#roles-and-actors.
package supervisor
