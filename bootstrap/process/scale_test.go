package process

import (
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

// A durable start with 100,000 objects (50,000 volumes and 50,000
// workloads over 10 nodes, NotReadyAfter 2 s) marks no node NotReady. It
// is a measurement at fleet scale, not part of the default suite (about
// 30 s without -race): TETHER_SCALE=1 go test -run TestRestartAtScale -v
// ./bootstrap.
func TestRestartAtScale(t *testing.T) {
	if os.Getenv("TETHER_SCALE") == "" {
		t.Skip("set TETHER_SCALE=1 to run the 100,000-object restart")
	}
	dir := t.TempDir()
	start := func() *Embedded {
		cfg := DefaultConfig()
		cfg.DataDir, cfg.Nodes, cfg.Durable = dir, 10, true
		cfg.LogOutput, cfg.LogLevel = io.Discard, "warn"
		cfg.Controller.Node.NotReadyAfter = 2 * time.Second
		cfg.Agent.HeartbeatEvery = 500 * time.Millisecond
		e, err := StartEmbedded(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := start()
	n := 50000
	var chs []controller.Change
	for i := 0; i < n; i++ {
		v := cloud.VolumeID(fmt.Sprintf("vol-%06d", i))
		chs = append(chs, controller.Change{Volume: &store.VolumeSpec{ID: v, Mode: cloud.Exclusive}})
		chs = append(chs, controller.Change{Workload: &store.Workload{UID: fmt.Sprintf("wl-%06d", i), Node: cloud.NodeName(fmt.Sprintf("n%d", i%10+1))}})
	}
	t0 := time.Now()
	if _, err := e.Ctl().ApplyAll(chs); err != nil {
		t.Fatal(err)
	}
	t.Logf("apply of %d objects: %s", 2*n, time.Since(t0))
	e.Stop()
	t0 = time.Now()
	e = start()
	t.Logf("start: %s", time.Since(t0))
	defer e.Stop()
	done := time.Now()
	// Every node has heard its agent since the start returned: a NotReady
	// transition, had there been one, is recorded by then.
	testkit.Eventually(t, 3*time.Minute, func() bool {
		for _, nn := range e.NodeNames {
			st, err := e.Ctl().NodeStatus(nn, 5*time.Second)
			if err != nil || !st.Ready || time.Unix(0, st.LastHeartbeatUnixNano).Before(done) {
				return false
			}
		}
		return true
	}, "heartbeats heard after the start")
	testkit.Eventually(t, 3*time.Minute, func() bool {
		st, err := e.Ctl().VolumeStatus(cloud.VolumeID(fmt.Sprintf("vol-%06d", n-1)), 5*time.Second)
		return err == nil && st.Restored
	}, "every volume actor restored")
	t.Logf("restored: %s", time.Since(t0))
	bad := 0
	for _, nn := range e.NodeNames {
		for _, ev := range e.Events.For(events.Ref{Kind: events.KindNode, Name: string(nn)}) {
			if ev.Type == "NodeNotReady" {
				bad++
				t.Logf("%s: %s", nn, ev.Message)
			}
		}
	}
	if bad != 0 {
		t.Fatalf("%d NodeNotReady events", bad)
	}
}
