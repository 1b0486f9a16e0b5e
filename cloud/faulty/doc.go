// Package faulty makes cloud calls fail as a real cloud's do: injected
// errors (the next n calls, or at a rate, of a given class), latency, a
// token-bucket throttle, lost replies (the call takes effect, its caller
// sees a timeout) and hung calls (held to the edge of their deadline),
// each set per method, drawn from a seeded generator so that the same
// seed and the same calls give the same faults, the throttle read at an
// injected clock.
//
// Faults holds the knobs and draws each call's fate; Run carries out a
// call with its fate. The sim cloud runs its own calls through them, and
// Provider puts them in front of any cloud.Provider (the loop cloud of a
// chaos run, a member's cloud in a distributed one).
//
// It owns no cloud state and never retries. Whatever it injects keeps
// the cloud.Provider contract: an injected error or a throttled call has
// no effect; a call once sent is carried out even if its caller stops
// waiting, and never after its deadline; only a caller that gets the
// context's error does not know the outcome.
package faulty
