package simulation

import "testing"

// The regressions below are core (and shell) bugs the simulation found.
// Each runs one seed under only the faults its bug needs and fails, with
// the shrunk plan and trace, until the bug is fixed. They are reported to
// the owners of the cores; this package does not work around them.

// only returns the default config with every fault off but workload churn
// and those set by f.
func only(f func(*Faults)) Config {
	cfg := DefaultConfig()
	cfg.Faults = Faults{WorkloadEvery: cfg.Faults.WorkloadEvery, FaultEvery: cfg.Faults.FaultEvery}
	f(&cfg.Faults)
	return cfg
}

func expectClean(t *testing.T, seed uint64, cfg Config) {
	t.Helper()
	if r := Run(seed, cfg); len(r.Violations) > 0 {
		t.Errorf("%s", r.Report())
		if *traceOut != "" {
			writeTrace(t, *traceOut, r.Trace)
		}
	}
}

// actors/volume: a verify that finds the volume attached turns an
// attachment Attached with the device path it has, which is "" when no
// attach of this incarnation answered (a rebuild whose store snapshot does
// not list the node yet, an Uncertain attachment after a lost attach
// response). ReportAttached{DevicePath: ""} then lists the volume with no
// device, the agent's Stage fails on device "" forever and nothing
// corrects it (the sync compares presence, not paths). Actor kills only.
func TestRegressionAttachedWithoutDevicePath(t *testing.T) {
	expectClean(t, 277, only(func(f *Faults) { f.KillWeight = 1 }))
}

// node agent protocol (actors/controller/node_actor.go, node/reconciler): the
// workloads an agent gets carry no revision and are never sent again once
// the agent is ready. A node actor restarted (or answering AgentStarted)
// reads the store and sends a snapshot that can arrive after a newer one
// the API sent (two senders, no order between them); a lost one is never
// resent. The agent then keeps mounting workloads deleted or moved away
// (or never mounts new ones) for good. Actor kills only.
func TestRegressionStaleWorkloads(t *testing.T) {
	expectClean(t, 1172, only(func(f *Faults) { f.KillWeight = 1 }))
}

// node/agent_effects.go (stage) with cloud/sim DeviceSource: the device a
// stage mounts is found by path only. After an instance restart the node
// status still lists a lost attachment at its old path until the sync
// notices; another volume attached meanwhile gets the same path and the
// agent mounts that volume's data as the stale one. Instance terminations
// only.
func TestRegressionStageMountsAnotherVolume(t *testing.T) {
	expectClean(t, 15, only(func(f *Faults) { f.TerminateWeight = 1 }))
}

// actors/controller/node_actor.go: VolumesInUse reports are applied in the
// order they arrive. A report delayed on the agent link (a heartbeat's
// repeat, say) arrives after a newer one and takes back a volume the agent
// has since mounted; the controller detaches it under the mount (I2). The
// reports are numbered (Seq) but older numbers are not refused. Link
// delays only.
func TestRegressionStaleInUseReportApplied(t *testing.T) {
	cfg := only(func(f *Faults) { f.LinkDelay = DefaultConfig().Faults.LinkDelay })
	expectClean(t, 457, cfg)
}

// actors/nodestatus + sync: a VolumeAttached whose status write fails is
// forgotten without a word to the volume (PersistFailed answers only
// pending detach preparations), so the volume believes Attached while the
// status does not list it. The sync compares the statuses with the cloud:
// once the cloud loses the attachment (instance terminated) both agree the
// volume is not there, and the volume, still Attached in its core, never
// attaches it again. Store write failures and instance terminations.
func TestRegressionForgottenAttachment(t *testing.T) {
	cfg := only(func(f *Faults) {
		f.PersistFail = DefaultConfig().Faults.PersistFail
		f.TerminateWeight = 1
	})
	expectClean(t, 30, cfg)
}

// actors/nodestatus: the write that makes a node NotReady may fail; the
// status is restored (Ready) and, the heartbeat deadline having passed,
// nothing ever wakes the node again: a node whose machine is gone stays
// Ready for good, and a volume Uncertain there (its attach failed NotFound)
// is never force-detached, so the exclusive volume never reaches the node
// its workload moved to. Store write failures and instance deletions.
func TestRegressionNotReadyWriteFailed(t *testing.T) {
	cfg := only(func(f *Faults) {
		f.PersistFail = DefaultConfig().Faults.PersistFail
		f.DeleteWeight = 1
	})
	expectClean(t, 996, cfg)
}

// actors/volume: a rebuilt volume kept a listed attachment Attached at the
// listed device while an attach of its earlier incarnation was in flight
// there. The listing predated a loss of the attachment (an instance
// terminated, then the ReportDetached's status write failed), and the
// attach landed at another device: the agent could never stage it, and the
// sync compares presence, not paths. Store write failures, instance
// terminations, lost responses and controller restarts.
func TestRegressionStaleDeviceAfterRestart(t *testing.T) {
	cfg := only(func(f *Faults) {
		d := DefaultConfig().Faults
		f.PersistFail, f.LostResponse = d.PersistFail, d.LostResponse
		f.TerminateWeight, f.ControllerRestartWeight = 1, 1
	})
	expectClean(t, 474, cfg)
}
