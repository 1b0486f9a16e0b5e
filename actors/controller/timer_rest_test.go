package controller

import (
	"fmt"
	"testing"

	"github.com/tether/tether/cloud"
)

// A settled volume keeps no timer: 20 volumes attached and recorded on
// their node leave the fake clock with the timers it had before them (the
// node's and the sync's), not one more per volume waiting 30 s to wake
// an actor with nothing to do.
func TestSettledVolumesKeepNoTimer(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	r.volume("v0", cloud.Exclusive)
	r.workload("w0", "n1", "v0")
	r.eventually("v0 settled", r.settled("v0", "n1"))
	base := r.clk.Pending() // with one volume settled: the node's, the sync's and, if any, v0's
	const n = 20
	for i := 1; i <= n; i++ {
		v := cloud.VolumeID(fmt.Sprintf("v%d", i))
		r.volume(v, cloud.Exclusive)
		r.workload(fmt.Sprintf("w%d", i), "n1", v)
	}
	for i := 1; i <= n; i++ {
		r.eventually("settled", r.settled(cloud.VolumeID(fmt.Sprintf("v%d", i)), "n1"))
	}
	r.eventually(fmt.Sprintf("at most %d timers pending", base), func() bool { return r.clk.Pending() <= base })
}
