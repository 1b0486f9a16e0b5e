// Package supervisor owns how tether restarts failed actors: an
// actor.SupervisorStrategy that restarts a failing child after a true
// exponential backoff (package backoff's curve, with jitter) and forgets its
// failures once it has run for a quiet period. It never stops a child and
// never escalates, so it is safe as a guardian (Proto.Actor panics when a
// guardian escalates), and a broken dependency makes an actor retry slowly
// rather than disappear. Proto.Actor's NewExponentialBackoffStrategy is
// linear, uncapped, with nanoseconds of jitter, and calls time.AfterFunc
// directly; this one schedules restarts on an injected clock.Clock and
// counts failures itself, because actor.RestartStatistics reads the wall
// clock and keeps a timestamp per failure forever.
package supervisor
