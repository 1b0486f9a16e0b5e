package main

import (
	"github.com/spf13/pflag"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/cloud/limit"
)

// controllerFlags are the controller's flags that tether up and tether
// controller share, defined here once (with validateControllerFlags, their
// one validation), so that a cluster member is bounded toward the cloud
// and forces detaches exactly as one process is: the sync period, the
// cloud call timeout, force detach, and tether's client-side cloud limit.
// c and cl hold the defaults when called.
func controllerFlags(f *pflag.FlagSet, c *controller.Config, cl *limit.Config) {
	f.DurationVar(&c.SyncPeriod, "sync-period", c.SyncPeriod, "how often the sync actor asks the cloud for the truth (at least 1s: each sync is one cloud call per batch of nodes)")
	f.DurationVar(&c.CloudTimeout, "cloud-timeout", c.CloudTimeout, "bound of every cloud call; a restarted controller keeps away from a node where an operation of its predecessor may land for up to this long")
	f.DurationVar(&c.Volume.MaxWaitForUnmount, "max-wait-for-unmount", c.Volume.MaxWaitForUnmount, "force detach from a NotReady node after this long")
	f.BoolVar(&c.Volume.DisableForceDetach, "disable-force-detach", c.Volume.DisableForceDetach, "never force detach from NotReady nodes")
	f.Float64Var(&cl.QPS, "cloud-qps", cl.QPS, "calls per second tether makes to the cloud at most, sustained (0: no limit; tether up with --sim-throttle: 90% of the sim's rate)")
	f.IntVar(&cl.Burst, "cloud-burst", cl.Burst, "calls tether may make at once after a quiet spell (tether up with --sim-throttle: the sim's bucket)")
	f.IntVar(&cl.MaxInFlight, "cloud-max-inflight", cl.MaxInFlight, "calls to the cloud waiting for an answer at once (0: no bound)")
}

// validateControllerFlags checks controllerFlags' flags.
func (v *validator) controllerFlags() {
	v.atLeast("sync-period", minSyncPeriod, "each sync makes one cloud call per batch of nodes; default 60s")
	v.atLeast("cloud-timeout", minCloudTimeout, "every cloud call is bounded by it; default 1m")
	v.atLeast("max-wait-for-unmount", 0, "0 force-detaches as soon as a node is NotReady; --disable-force-detach never does")
	v.rate("cloud-qps")
	v.count("cloud-burst", 1, 1_000_000, "calls that may go at once after a quiet spell")
	v.count("cloud-max-inflight", 0, 1_000_000, "0: no bound")
}
