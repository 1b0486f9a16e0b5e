package distributed

import (
	"sync"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/faulty"
)

// Faults are the cloud and store faults a chaos run turns on in a member
// (Command.Faults); the zero value is none. They stand for the sim
// cloud's fault knobs (the cloud process has no remote control of them),
// applied by the member to its own calls through a faulty.Provider: an
// error before any effect, latency before the call, a token bucket, a
// reply lost after the effect (the caller waits until its deadline), a
// call held to the edge of its deadline and carried out there.
type Faults struct {
	ErrorRate     float64       `json:"error_rate,omitempty"` // attach, detach and the batched queries fail (retryable)
	Latency       time.Duration `json:"latency,omitempty"`
	ThrottleQPS   float64       `json:"throttle_qps,omitempty"`
	ThrottleBurst int           `json:"throttle_burst,omitempty"`
	ReplyLoss     float64       `json:"reply_loss,omitempty"`
	HangRate      float64       `json:"hang_rate,omitempty"` // attach and detach
	// StoreFailRate fails node status writes (store.ErrInjected) before
	// they are sent.
	StoreFailRate float64 `json:"store_fail_rate,omitempty"`
	Seed          uint64  `json:"seed,omitempty"`
}

// hangMargin: a hung call is sent this long before its deadline, enough
// for the remote client's margin (cloud/remote.DeadlineMargin) and the
// trip.
const hangMargin = 40 * time.Millisecond

// failing are the calls ErrorRate and ReplyLoss apply to; HangRate
// applies to attaches and detaches; latency and throttling to every call.
var failing = []faulty.Method{faulty.MethodAttach, faulty.MethodDetach,
	faulty.MethodVolumesAreAttached, faulty.MethodInstanceVolumes, faulty.MethodInstanceIDs}

// faultyCloud is a member's cloud behind the chaos control's Faults.
type faultyCloud struct {
	*faulty.Provider
	seed sync.Once // the generator is seeded by the first Faults
}

func newFaultyCloud(p cloud.Provider) *faultyCloud {
	return &faultyCloud{Provider: faulty.Wrap(p, faulty.New(faulty.Config{HangMargin: hangMargin, Name: "chaos"}))}
}

// set replaces the faults with f.
func (c *faultyCloud) set(f Faults) {
	k := c.Faults
	c.seed.Do(func() { k.Reseed(f.Seed) })
	for _, m := range failing {
		k.SetErrorRate(m, f.ErrorRate, cloud.KindRetryable)
		k.SetReplyLoss(m, f.ReplyLoss)
	}
	for _, m := range []faulty.Method{faulty.MethodAttach, faulty.MethodDetach} {
		k.SetHangRate(m, f.HangRate)
	}
	k.SetLatency(f.Latency)
	k.SetThrottle(f.ThrottleQPS, max(1, f.ThrottleBurst))
}
