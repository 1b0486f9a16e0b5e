// Package sim is an in-memory cloud implementing cloud.Provider. It is
// tether's embedded default provider and the cloud of its tests.
//
// It owns the simulated ground truth: instances (one per node, with a
// running flag and an attach limit), volumes (with an access mode) and the
// attachments between them, plus the knobs that make a real cloud hard to
// talk to: latency, a token-bucket throttle, injected and random errors,
// lost replies and hung calls (cloud/faulty's knobs, embedded: one fault
// injector for every cloud) and a batch limit on the bulk queries. It counts every call (Calls) and
// reports every real attachment change to observers (Observe).
//
// It never retries, never attaches or detaches anything on its own (only
// Terminate, Replace, Delete and ConsoleDetach remove attachments, as a
// real cloud or its operator does) and never touches the network or the host's devices: device paths
// are names, nothing more. Its only writes to disk are, with
// Config.ContentDir set, one directory per volume standing for the volume's
// disk (DeviceSource), so that data written by a workload follows the
// volume from node to node, and, with Config.StatePath set, its state
// (instances, volumes, attachments, counters): a snapshot at StatePath and
// a log of the changes since, at StatePath + ".log", to which every change
// is appended durably before its call returns, concurrent changes sharing
// one write and one fsync, and which is folded into a new snapshot now and
// then, so that the cloud survives the process (Open; Close).
//
// It is as unkind as a real cloud where that matters to safety. Each
// provider call is sent once counted and admitted by the throttle (a
// context already done fails it before it is sent); from then on it is
// carried out whether or not its caller still waits, because a real cloud
// does not know that its client died. It takes effect after the latency
// (a hung call, SetHangRate: at the very end of its context's deadline),
// never after that deadline: a call still queued when its deadline passes
// is dropped. The effect runs, in this order: injected errors (FailNext,
// then SetErrorRate), the effect, and with StatePath the write of the
// state file (a failed write undoes the effect). Its reply may be lost
// after the effect (SetReplyLoss): the caller then waits until its context
// ends and sees a timeout, while the cloud changed. A caller that gets the
// context's error therefore does not know the outcome; any other error
// means no effect. With Config.Permissive it accepts a second exclusive
// attach, as a multi-attach disk would, so that tether's own decisions, not
// the cloud's refusals, are what ground-truth checkers judge; strict (the
// default) refuses it. Instances can be terminated and started (Terminate,
// Start), replaced by a new instance under the same node name (Replace),
// deleted for good (Delete), and a volume detached from the cloud's side
// while its instance runs (ConsoleDetach). A volume's mode and attachments
// can be read (Volume) and a detached volume deleted (DeleteVolume; an
// attached one never is). ObserveSync reports every attachment change
// synchronously at the moment it happens (ObserveSyncFrom: from the
// attachments current when it starts, until stopped), Observe
// asynchronously.
//
// A Cloud is safe for concurrent use. It holds one mutex, never while
// waiting out latency, never while writing or syncing its files (a change
// is applied under it, queued in order, and its call waits for the write
// without it) and never while calling Observe's hooks (ObserveSync's hooks
// run under it). Reads wait until the changes made before them are durable,
// so that nothing shows a change that a failed write may still undo. It
// has no global mutable state and no goroutine of its own: each New returns
// an independent cloud (two clouds must not share a StatePath).
package sim
