package process

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/limit"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/cloud/testkit"
)

// fleetStart runs vols workloads (one volume each) over 4 nodes against a
// sim cloud that throttles beyond 20 calls/s, until every volume is
// attached, and returns the sim's counters: the cloud's own count of the
// calls it throttled.
func fleetStart(t *testing.T, vols int, lim limit.Config) sim.Counters {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Nodes = t.TempDir(), 4
	cfg.LogOutput, cfg.LogLevel = io.Discard, "error"
	cfg.Sim.ThrottleRate = 20
	cfg.CloudLimit = lim
	cfg.Controller.SyncPeriod = time.Hour // the fleet start's calls only
	useSymlinks(t, &cfg)
	e, err := StartEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	}()
	var chs []controller.Change
	for i := range vols {
		v := cloud.VolumeID(fmt.Sprintf("v%03d", i))
		e.Cloud.CreateVolume(v, cloud.Exclusive)
		chs = append(chs, controller.Change{Volume: &store.VolumeSpec{ID: v, Mode: cloud.Exclusive}},
			controller.Change{Workload: &store.Workload{UID: fmt.Sprintf("w%03d", i), Node: e.NodeNames[i%len(e.NodeNames)], Volumes: []cloud.VolumeID{v}}})
	}
	if _, err := e.Ctl().ApplyAll(chs); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, func() bool {
		n := 0
		for _, insts := range e.Cloud.Attachments() {
			n += len(insts)
		}
		return n == vols
	}, "every volume attached")
	return e.Cloud.Calls()
}

func total(m map[sim.Method]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// Against a cloud that throttles beyond 20 calls/s, a fleet start of 80
// volumes without a client-side limit gets throttled errors (the baseline,
// in the same run); with tether's limit at 90% of the cloud's rate and its
// bucket, it gets almost none.
func TestFleetStartWithinCloudLimits(t *testing.T) {
	const vols = 80
	without := fleetStart(t, vols, limit.Config{})
	with := fleetStart(t, vols, limit.Config{QPS: 18, Burst: 20, MaxInFlight: 64})
	t.Logf("without a limit: %d calls, %d throttled; with: %d calls, %d throttled", total(without.Calls), total(without.Throttled), total(with.Calls), total(with.Throttled))
	if total(without.Throttled) == 0 {
		t.Fatalf("the baseline was not throttled at all: the test shows nothing")
	}
	if got, most := total(with.Throttled), total(with.Calls)/50; got > most {
		t.Fatalf("with the limit, %d of %d calls were throttled, want at most %d (2%%)", got, total(with.Calls), most)
	}
}
