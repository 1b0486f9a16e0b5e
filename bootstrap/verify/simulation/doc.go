// Package simulation is tether's deterministic simulation tier (DESIGN.md,
// testing tier 2). It runs the production shells' runners over the pure
// cores (actors/volume, actors/nodestatus, node/reconciler,
// actors/syncer) against the in-memory sim cloud, the in-memory store and
// a simulated disk per node, through a single-threaded, seeded event loop
// with a virtual clock, and checks the safety invariants I1-I4 after
// every change of the ground truth and I5 once the faults stop. It never
// starts goroutines, never reads the real clock and never sleeps: the
// same seed gives the same run, trace included. (The runners' loggers
// and a stage's context are real, and unused by any decision.)
//
// # Production shells, hosted
//
// The simulation runs the shells' own code, not a copy of it. Each shell
// is split into a runner (plain code: messages in, core stepped, effects
// carried out) and a host interface that gives it everything it needs
// from the outside; the Proto.Actor actor and this scheduler both
// provide that interface:
//
//   - volume actor: controller.VolumeRunner over controller.VolumeHost
//     (volume_host.go): Now; SendNode and SendSelf (protobuf messages);
//     WakeAt and StopTimer; Record; Verify (the cloud asked off the turn,
//     answered once); Call (one attach or detach in three steps:
//     Prepare records the intent and resolves the instance, Send is the
//     cloud call, Finish forgets the instance, shortens the intent and
//     sends the result home); PutIntent, Resolve, Forget (the store and
//     the instance cache); Fenced. Here Call applies the cloud's latency,
//     injected errors, lost and duplicated replies and hangs between the
//     steps.
//   - node agent: agent.Runner over agent.Host (agent_host.go): Now;
//     SendController and SendSelf; WakeAt; Record; with agent.Mounts (here
//     the simulated disk) and agent.Calls (here NewCallsOn: this scheduler
//     decides when a mount call returns: soon, slowly, or hung past the
//     agent's OpTimeout, dying with its machine).
//   - node actor: controller.NodeRunner over controller.NodeHost
//     (node_host.go): Now; SendVolume, SendAgent; QueueFlush (the group
//     commit's flush, behind the mailbox); WakeAt; PutStatus (here the
//     store, whose writes the plan may fail); Fenced; Record;
//     ReadyChanged; Prefetch.
//   - sync actor: controller.SyncRunner over controller.SyncHost
//     (sync_host.go): Now; SendVolume; WakeAt; Query (one batch's
//     InstanceVolumes off the turn, answered as a SyncBatchFinished);
//     Record; PassFinished.
//
// What stays written here is what the hosts provide: the scheduler (the
// mailboxes, timers and links), the cloud's client side (the volume
// actors' verifier, the sync actor's query, the instance cache:
// cloudcall.go, sync_host.go, instances.go), the simulated disk, and the
// wiring the Proto.Actor shells do around their runners (which store
// snapshot a core starts from; the node actor's agent registry and
// readiness events are not simulated). How every core rebuilds when it
// (re)starts is the shells': volume: store snapshot
// (controller.ReadVolume) then a targeted verify, messages queued until it
// answers; node: the persisted status, then workloads and status pushed
// to the agent; agent: a scan of its disk with the calls still running,
// then a hello.
//
// # Fault model
//
// Only what the real system can do is injected. Every injected fault (and
// every workload change and kill) is a decision of the run's fault plan,
// drawn from the seed and named by where it happened and its number there
// ("link agent/n1>node/n1#3", "cloud attach v2#0", "faults#7"), which is
// what shrinking turns off. Each site (a link, a volume's calls of one
// method, a node's store writes, the churn, ...) draws from a stream of
// its own and the same number of values whatever happens, so that turning
// one decision off shifts as little else as possible.
//
//   - In-process messages (volume <-> node actor, sync -> volume, the
//     desired-state writer -> volume) are FIFO per (sender, receiver) pair
//     with a small random latency, never duplicated, and lost only when the
//     receiver dies: a killed core loses its queued inbound messages and
//     every message sent to it while it is down.
//   - The agent <-> node actor link (it crosses a network in distributed
//     mode; the workloads the controller sends to an agent travel on it
//     too) has independent latencies, so it reorders; a message may be
//     delayed by seconds (REORDER), dropped (DROP) or delivered twice
//     (DUPLICATE), and a node may be partitioned (every message dropped)
//     for minutes, which makes it NotReady and lets force detach happen. A
//     node cut off (partitioned, or its machine down) may be marked out of
//     service, as an operator would.
//   - Cloud calls execute in the sim cloud after a random latency, always
//     before the caller's CloudTimeout (the shells bound every call by it).
//     A call may fail before any effect (FailNext, seeded), its response
//     may be lost (the effect happened, the caller gets a timeout error at
//     CloudTimeout), an attach or detach may hang (its effect lands at the
//     very end of CloudTimeout, its reply is lost), and its result may be
//     delivered twice. Results travel independently (they reorder) and go
//     to whichever incarnation of the caller is alive when they arrive
//     (none: lost): a killed core's calls still complete in the cloud and
//     the new incarnation sees them as stale results (the shell drops
//     what comes back after its incarnation ended). The cloud is
//     permissive (a second exclusive attach is accepted), so that I1 rests
//     on tether's decisions alone (Config.StrictCloud opts out).
//   - The shells name instances as the controller does: through a cache
//     per controller process (instances.go), filled on a miss, an entry
//     forgotten when a call fails NotFound and dropped by the sync when
//     InstanceVolumes omits its instance; a call names the instance
//     resolved when it was sent. Intents are recorded before every attach
//     and detach, and shortened to the moment its reply reaches the
//     incarnation that sent it, as the shells do.
//   - A store write of a node status may fail (FailNodeStatusWrites).
//   - A mount operation may fail, possibly leaving a half-done mount. A
//     mount call may be slow (up to the agent's OpTimeout) or hang (it
//     returns only after the agent's core timed its operation out, up to
//     half a minute later; the agent leaves its volume alone meanwhile,
//     across its own restarts), and a call dies with its machine.
//   - Any core may be killed at any time and comes back after a restart
//     delay (0.5 to 5 s), with a new random incarnation base for its
//     operation, report or pass numbers, as the shells draw it; a killed
//     agent's mount calls go on (agent.Calls), and their results reach
//     its next incarnation. The whole controller may restart: every volume, node and
//     sync core killed at once, its in-process messages, mailboxes (the
//     results of its calls in flight) and instance cache lost with it.
//   - Instances (machines.go), as a real cloud treats them: terminated
//     (the cloud detaches everything, the node's agent goes down and, as
//     after a reboot, every mount is left half-done) and started again
//     minutes later, or within half a sync period (a reboot: the next sync
//     pass finds the lost attachments and what is wanted is attached
//     again); replaced (terminated, then a new InstanceID backs the node
//     and the agent boots there; calls naming the old one fail NotFound);
//     deleted for good (its attachments and its disk vanish, calls fail
//     NotFound, a detach from it completes as success), followed by a
//     decision of its own: a new instance for the node, or the node and its
//     workloads deleted from the desired state. A volume may be detached
//     from the cloud console while its node keeps running: a mount there
//     outlives its device.
//   - A node may be deleted from the desired state with its workloads, in
//     one store transaction (as the API would), while its volumes are
//     attached and mounted; a controller restart may follow at once, and
//     the node may register again minutes later.
//   - The workload churn (create, move, delete workloads) runs during the
//     faulty phase only, on the nodes in the desired state. It never wants
//     an exclusive volume on two nodes at once: moving a workload is how
//     such a volume changes nodes.
//
// After the faulty phase comes the calm: partitions heal, out-of-service
// marks are lifted, stopped instances start, pending replacements happen,
// a node in the desired state whose instance was deleted gets a new one (a
// deleted node's deleted machine stays gone), dead cores restart, and no
// fault is injected any more. I5 is checked at the end of the calm.
//
// # Invariants (ground truth: the sim cloud, the simulated disks, the store)
//
//   - I1: an exclusive volume is attached to at most one instance.
//   - I2: no detach by tether while the node's disk has the volume staged
//     or published (half-done mounts included), unless a ForceDetach was
//     recorded for that volume and node since it was last attached there.
//   - I3: a stage or publish executes only while the cloud has the volume
//     attached to the node's instance (at the device the stage names: the
//     data mounted must be the volume's), unless it was force-detached from
//     the node, or (a publish) the cloud console detached it while the
//     node had it staged (the mount outlived its device by the cloud's
//     doing; a new stage needs the device attached, so this excuses nothing
//     tether did); and the agent decided it (the moment its runner started
//     the mount call, judged against the node status it held then: the
//     last one it received, before any wiring of its own touched it)
//     while that status listed the volume in both VolumesInUse and
//     VolumesAttached,
//     and that status was not superseded by the agent's own reports (the
//     node's persisted VolumesInUse leaving the volume out before the node
//     heard the report in which the agent started reporting it again).
//   - I4: at each detach by tether, the persisted node status does not list
//     the volume in VolumesAttached.
//   - I5: at the end of the calm (Config.CalmDeadline: one sync period,
//     the largest backoff, one cloud timeout and the heartbeat timeout after
//     the faults stop), every workload's volumes are attached to its node
//     and staged and published there, and nothing else is attached or
//     mounted. A node deleted from the desired state has no workloads: it
//     converges when nothing is attached to its instance (if it still has
//     one) and nothing is mounted on its machine's disk (gone with a
//     deleted machine).
//
// Each checker is proven by a test that breaks its rule on purpose
// (Config.Break) and sees it reported (break_test.go).
//
// On a violation, Run shrinks the fault plan (prefixes, then single
// decisions removed, a bounded number of re-runs) and returns the trace of
// the smallest plan that still breaks the same invariant.
//
// # Running
//
//	go test ./bootstrap/verify/simulation -run TestSimulationSeeds -sim.seeds=1000
//	go test ./bootstrap/verify/simulation -run TestSimulationSeeds -sim.first=238 -sim.seeds=1 -sim.trace=/tmp/trace.txt
//
// The second replays one seed and writes its full trace.
package simulation
