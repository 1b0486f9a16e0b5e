// Package sim is an in-memory cloud implementing cloud.Provider. It is
// tether's embedded default provider and the cloud of its tests.
//
// It owns the simulated ground truth: instances (one per node, with a
// running flag and an attach limit), volumes (with an access mode) and the
// attachments between them, plus the knobs that make a real cloud hard to
// talk to: latency, a token-bucket throttle, injected and random errors and
// a batch limit on the bulk queries. It counts every call (Calls) and
// reports every real attachment change to observers (Observe).
//
// It never retries, never attaches or detaches anything on its own (only
// Terminate removes attachments, as a real cloud does when a machine goes
// away) and never touches the network or the host's devices: device paths
// are names, nothing more. Its only writes to disk are, with
// Config.ContentDir set, one directory per volume standing for the volume's
// disk (DeviceSource), so that data written by a workload follows the
// volume from node to node, and, with Config.StatePath set, one state file
// holding its instances, volumes, attachments and counters, rewritten
// atomically after every change, so that the cloud survives the process
// (Open). Each provider call runs, in this order: count the call; throttle
// check; latency (a cancelled context returns ctx.Err() with no effect);
// injected errors (FailNext, then SetErrorRate); then the effect; then, with
// StatePath, the write of the state file (a failed write undoes the
// effect). A call that returns an error has had no effect.
//
// A Cloud is safe for concurrent use. It holds one mutex, never while
// sleeping for latency and never while calling observers, but while
// writing the state file (so the file's versions follow the changes). It
// has no global mutable state: each New returns an independent cloud (two
// clouds must not share a StatePath).
package sim
