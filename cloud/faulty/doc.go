// Package faulty makes cloud calls fail as a real cloud's do: injected
// errors (the next n calls, or at a rate, of a class), latency, a
// token-bucket throttle at an injected clock, lost replies and hung
// calls, set per method and drawn from a seeded generator (same seed,
// same calls, same faults). Faults draws each call's fate and Run carries
// it out; the sim cloud runs its calls through them, and Provider puts
// them in front of any cloud.Provider.
//
// It owns no cloud state, never retries, and keeps the cloud.Provider
// contract: an injected error or a throttled call has no effect; a sent
// call is carried out even if its caller stops waiting, never after its
// deadline.
//
// See docs/chaos-and-simulation.md#chaos-tether-chaos.
package faulty
