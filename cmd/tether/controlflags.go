package main

// validateControllerFlags checks process.ControllerFlags' flags (their one
// validation, shared by tether up and tether controller).
func (v *validator) controllerFlags() {
	v.atLeast("sync-period", minSyncPeriod, "each sync makes one cloud call per batch of nodes; default 60s")
	v.atLeast("cloud-timeout", minCloudTimeout, "every cloud call is bounded by it; default 1m")
	v.atLeast("max-wait-for-unmount", 0, "0 force-detaches as soon as a node is NotReady; --disable-force-detach never does")
	v.rate("cloud-qps")
	v.count("cloud-burst", 1, 1_000_000, "calls that may go at once after a quiet spell")
	v.count("cloud-max-inflight", 0, 1_000_000, "0: no bound")
}
