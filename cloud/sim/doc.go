// Package sim is an in-memory cloud implementing cloud.Provider: tether's
// embedded default provider and the cloud of its tests. It owns the
// simulated ground truth (instances, volumes, attachments), counts every
// call (Calls) and reports every real attachment change (Observe,
// ObserveSync).
//
// It is as unkind as a real cloud where safety is concerned: a sent call
// is carried out whether or not its caller still waits, never after its
// deadline, and its reply may be lost. It never retries, never attaches
// or detaches on its own, touches no network or device, writes to disk
// only with Config.ContentDir or Config.StatePath, and has no global
// state and no goroutine of its own.
//
// See docs/storage.md#the-sim-cloud-inside for the order of a call's
// effects, durability and locking.
package sim
