package process

import (
	"github.com/spf13/pflag"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud/limit"
	"github.com/tether/tether/cloud/sim"
)

// The bounds of the flags below, for the command line's validation (cmd/
// imports bootstrap/ only, so what it checks against is named here).
const (
	MinEventTTL        = store.MinEventTTL
	MaxEventTTL        = store.MaxEventTTL
	MaxEventsPerObject = store.MaxEventsPerObject
	// DefaultAttachLimit is how many volumes a sim instance may have
	// attached unless told otherwise.
	DefaultAttachLimit = sim.DefaultAttachLimit
)

// DefaultCloudLimit is tether's client-side bound toward the cloud unless
// flags say otherwise (limit.Defaults).
func DefaultCloudLimit() limit.Config { return limit.Defaults() }

// ControllerFlags are the controller's flags that tether up and tether
// controller share, defined here once (with the command line's one
// validation of them), so that a cluster member is bounded toward the cloud
// and forces detaches exactly as one process is: the sync period, the
// cloud call timeout, force detach, and tether's client-side cloud limit.
// c and cl hold the defaults when called.
func ControllerFlags(f *pflag.FlagSet, c *controller.Config, cl *limit.Config) {
	f.DurationVar(&c.SyncPeriod, "sync-period", c.SyncPeriod, "how often the sync actor asks the cloud for the truth (at least 1s: each sync is one cloud call per batch of nodes)")
	f.DurationVar(&c.CloudTimeout, "cloud-timeout", c.CloudTimeout, "bound of every cloud call; a restarted controller keeps away from a node where an operation of its predecessor may land for up to this long")
	f.DurationVar(&c.Volume.MaxWaitForUnmount, "max-wait-for-unmount", c.Volume.MaxWaitForUnmount, "force detach from a NotReady node after this long")
	f.BoolVar(&c.Volume.DisableForceDetach, "disable-force-detach", c.Volume.DisableForceDetach, "never force detach from NotReady nodes")
	f.Float64Var(&cl.QPS, "cloud-qps", cl.QPS, "calls per second tether makes to the cloud at most, sustained (0: no limit; tether up with --sim-throttle: 90% of the sim's rate)")
	f.IntVar(&cl.Burst, "cloud-burst", cl.Burst, "calls tether may make at once after a quiet spell (tether up with --sim-throttle: the sim's bucket)")
	f.IntVar(&cl.MaxInFlight, "cloud-max-inflight", cl.MaxInFlight, "calls to the cloud waiting for an answer at once (0: no bound)")
}

// EventFlags are the event log's flags, the same on tether up, tether
// controller and tether agent (every process that records events).
func EventFlags(f *pflag.FlagSet, o *store.EventOptions) {
	o.TTL, o.PerObject = store.DefaultEventTTL, store.DefaultEventsPerObject
	f.DurationVar(&o.TTL, "event-ttl", o.TTL, "how long events are kept in the store (tether get events, tether describe)")
	f.IntVar(&o.PerObject, "events-per-object", o.PerObject, "how many events of one object are kept (the newest)")
}
