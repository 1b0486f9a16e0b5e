package controller

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// A snapshot serves the first incarnation of its volume only, and only
// while the handoff is open. Each script's steps: "fill v1 v2" (Start's
// snapshots), "take v1" (an incarnation of v1 starts; the step's want is
// "snapshot" or "store"), "close".
func TestHandoffServesFirstIncarnationOnly(t *testing.T) {
	type step struct{ do, want string }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first incarnation takes, restarts read the store", []step{
			{"fill v1 v2", ""}, {"take v1", "snapshot"}, {"take v1", "store"}, {"take v2", "snapshot"}, {"take v1", "store"}}},
		{"no snapshot for a volume Start did not read", []step{{"fill v1", ""}, {"take v9", "store"}}},
		{"an actor started before Start's read never gets it", []step{
			{"take v1", "store"}, {"fill v1 v2", ""}, {"take v1", "store"}, {"take v2", "snapshot"}}},
		{"closed: nothing is handed", []step{{"fill v1 v2", ""}, {"take v1", "snapshot"}, {"close", ""}, {"take v2", "store"}}},
		{"closed before the fill: nothing is held", []step{{"close", ""}, {"fill v1", ""}, {"take v1", "store"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(start)
			var h handoff[cloud.VolumeID, VolumeSnapshot]
			for i, s := range tc.steps {
				f := strings.Fields(s.do)
				switch f[0] {
				case "fill":
					snaps := map[cloud.VolumeID]VolumeSnapshot{}
					for _, v := range f[1:] {
						snaps[cloud.VolumeID(v)] = VolumeSnapshot{ObjectUID: v}
					}
					h.fill(snaps, clk.AfterFunc(time.Hour, h.close))
				case "take":
					snap, ok := h.take(cloud.VolumeID(f[1]))
					got := "store"
					if ok {
						got = "snapshot"
						if snap.ObjectUID != f[1] {
							t.Fatalf("step %d (%s): the snapshot of %q", i, s.do, snap.ObjectUID)
						}
					}
					if got != s.want {
						t.Fatalf("step %d (%s): %s, want %s", i, s.do, got, s.want)
					}
				case "close":
					h.close()
				}
			}
			h.close()
			if n := clk.Pending(); n != 0 {
				t.Fatalf("%d timers left after close", n)
			}
		})
	}
}

// The handoff is dropped when its timer fires (the restore outlived
// RestoreGrace): what it held goes.
func TestHandoffTimerDropsSnapshots(t *testing.T) {
	clk := clock.NewFake(start)
	var h handoff[cloud.VolumeID, VolumeSnapshot]
	h.fill(map[cloud.VolumeID]VolumeSnapshot{"v1": {}}, clk.AfterFunc(time.Minute, h.close))
	clk.Advance(time.Minute)
	if _, ok := h.take("v1"); ok {
		t.Fatal("a snapshot was handed after the handoff's timer fired")
	}
}

// Once everything held is taken the handoff closes: it tracks no more
// starts and its timer is stopped; nodes' actors may start after the
// restore is over, so that, not the restore's end, ends theirs.
func TestHandoffClosesWhenAllTaken(t *testing.T) {
	clk := clock.NewFake(start)
	var h handoff[cloud.NodeName, int]
	h.fill(map[cloud.NodeName]int{"n1": 1, "n2": 2}, clk.AfterFunc(time.Minute, h.close))
	if got, ok := h.take("n2"); !ok || got != 2 {
		t.Fatalf("take n2: %d, %v", got, ok)
	}
	if h.over || clk.Pending() != 1 {
		t.Fatalf("closed with n1 still held (over %v, %d timers)", h.over, clk.Pending())
	}
	if got, ok := h.take("n1"); !ok || got != 1 {
		t.Fatalf("take n1: %d, %v", got, ok)
	}
	if !h.over || h.started != nil || clk.Pending() != 0 {
		t.Fatalf("all taken: over %v, %d starts tracked, %d timers; want closed, none, none", h.over, len(h.started), clk.Pending())
	}
}

// readCounter counts the per-volume reads of a volume actor's rebuild and
// the whole-store reads; it is a TableReader as its Memory is. Claims of
// the volume failClaim fail while it is set.
type readCounter struct {
	*store.Memory
	mu        sync.Mutex
	counts    map[string]int // "ReadTables", "Intents v1", ...
	failClaim cloud.VolumeID
}

func (c *readCounter) count(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[what]++
}

func (c *readCounter) get(what string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[what]
}

// perVolume sums the per-volume reads of every volume.
func (c *readCounter) perVolume() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.counts {
		if strings.Contains(k, " ") {
			n += v
		}
	}
	return n
}

func (c *readCounter) setFailClaim(v cloud.VolumeID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failClaim = v
}

func (c *readCounter) Claim(owner string) (uint64, error) {
	c.mu.Lock()
	fail := c.failClaim != "" && owner == store.VolumeOwner(c.failClaim)
	c.mu.Unlock()
	if fail {
		return 0, store.ErrInjected
	}
	return c.Memory.Claim(owner)
}

func (c *readCounter) ReadTables() (store.Tables, error) {
	c.count("ReadTables")
	return c.Memory.ReadTables()
}

func (c *readCounter) Intents(v cloud.VolumeID) ([]store.Intent, error) {
	c.count("Intents " + string(v))
	return c.Memory.Intents(v)
}

func (c *readCounter) StatusesWithVolume(v cloud.VolumeID) ([]nodestatus.Status, error) {
	c.count("StatusesWithVolume " + string(v))
	return c.Memory.StatusesWithVolume(v)
}

func (c *readCounter) DesiredNodes(v cloud.VolumeID) ([]cloud.NodeName, error) {
	c.count("DesiredNodes " + string(v))
	return c.Memory.DesiredNodes(v)
}

func (c *readCounter) WorkloadsOn(n cloud.NodeName) ([]store.Workload, error) {
	c.count("WorkloadsOn " + string(n))
	return c.Memory.WorkloadsOn(n)
}

// agentProbe stands in for a node's agent: it passes on the desired
// states its node actor tells it.
func agentProbe(r *rig, node cloud.NodeName, got chan<- *messages.NodeWorkloads) {
	props := actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*messages.NodeWorkloads); ok {
			got <- m
		}
	})
	if _, err := r.sys.Root.SpawnNamed(props, AgentPrefix+string(node)); err != nil {
		r.t.Fatal(err)
	}
}

// A controller restart restores its volumes from one whole-store read: no
// volume actor reads its own. One restarted by the supervisor reads the
// store afresh, during the restore (its predecessor took the snapshot) as
// after it, and so does one respawned after a stop; one whose first
// incarnation failed before taking its snapshot (in its claim) takes it.
func TestRestartHandsSnapshotsOnce(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Node.NotReadyAfter = 24 * time.Hour })
	r.node("n1", "n2")
	const n = 12
	vols := make([]cloud.VolumeID, n)
	for i := range vols {
		vols[i] = cloud.VolumeID(fmt.Sprintf("v%02d", i))
		r.volume(vols[i], cloud.Exclusive)
		r.workload(fmt.Sprintf("w%02d", i), cloud.NodeName(fmt.Sprintf("n%d", 1+i%2)), vols[i])
	}
	settledAll := func() bool {
		for i, v := range vols {
			if !r.settled(v, cloud.NodeName(fmt.Sprintf("n%d", 1+i%2)))() {
				return false
			}
		}
		return true
	}
	r.eventually("attached", settledAll)

	// The restore waits for v11, whose claim fails until it is retried.
	must(t, r.ctl.Stop(5*time.Second))
	told := make(chan *messages.NodeWorkloads, 100)
	agentProbe(r, "n1", told)
	agentProbe(r, "n2", told)
	rev, err := r.store.Revision()
	must(t, err)
	c := &readCounter{Memory: r.store, counts: map[string]int{}, failClaim: "v11"}
	r.ctl = New(r.sys, r.cfg, r.calls, c, r.rec)
	must(t, r.ctl.Start())
	// Each node actor tells its agent its desired state, from the same
	// read: no node actor reads its workloads itself.
	for range 2 {
		select {
		case m := <-told:
			want, err := agentMessages(r.store, []cloud.NodeName{cloud.NodeName(m.Node)})
			must(t, err)
			if m.Revision != rev || !proto.Equal(m, want[0]) {
				t.Fatalf("agent of %s told %v, want %v (revision %d)", m.Node, m, want[0], rev)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a node actor told its agent nothing on restart")
		}
	}
	r.eventually("v11's restart scheduled", func() bool { return len(r.restartDelays()) == 1 })
	for _, v := range vols[:n-1] {
		_, err := r.ctl.VolumeStatus(v, 5*time.Second) // through the mailbox: after Started
		must(t, err)
	}
	if got := c.get("ReadTables"); got != 1 {
		t.Fatalf("%d whole-store reads for the restore, want 1", got)
	}
	if got := c.perVolume(); got != 0 {
		t.Fatalf("%d per-object reads by the first incarnations of %d volumes and their nodes, want 0: %v", got, n, c.counts)
	}
	r.sys.Root.Send(r.pid(volumePrefix+"v00"), &messages.Crash{Reason: "test"})
	r.eventually("v00's restart scheduled", func() bool { return len(r.restartDelays()) == 2 })
	if r.ctl.Restored() {
		t.Fatal("the restore is over while v11 has not started")
	}
	c.setFailClaim("")
	r.clk.Advance(max(r.restartDelays()[0], r.restartDelays()[1]))
	r.eventually("v00 read the store", func() bool { return c.get("Intents v00") == 1 })
	r.eventually("restored", r.ctl.Restored)
	r.eventually("attached after the restart", settledAll)

	// After the restore, a respawn reads the store too.
	must(t, r.sys.Root.StopFuture(r.pid(volumePrefix+"v01")).Wait())
	r.eventually("v01's respawn scheduled", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.respawns) == 1
	})
	r.clk.Advance(r.cfg.Respawn.Initial)
	// Intents is ReadVolume's last read: the others came before it.
	r.eventually("v01 read the store", func() bool { return c.get("Intents v01") == 1 })
	for _, what := range []string{"Intents", "StatusesWithVolume", "DesiredNodes"} {
		for _, v := range []string{"v00", "v01"} {
			if got := c.get(what + " " + v); got != 1 {
				t.Errorf("%s %s: %d reads, want 1 (by the new incarnation)", what, v, got)
			}
		}
	}
	if got := c.perVolume(); got != 6 {
		t.Errorf("%d per-volume reads in all, want 6 (three by each of two new incarnations, none by v11's): %v", got, c.counts)
	}
	r.eventually("attached after the respawn", settledAll)
}

// An agent that announces itself after a restart (as every agent of a
// restarted process does, after the controller started) is sent the state
// its node actor took from Start's bulk read, without a read, if nothing
// was applied since; otherwise, and on any later announcement, the node
// actor reads the store.
func TestAgentStartedResendsRestoreState(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Node.NotReadyAfter = 24 * time.Hour })
	r.node("n1", "n2")
	r.volume("v1", cloud.Exclusive)
	r.volume("v2", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.workload("w2", "n2", "v2")
	r.eventually("attached", func() bool { return r.settled("v1", "n1")() && r.settled("v2", "n2")() })

	must(t, r.ctl.Stop(5*time.Second))
	told := make(chan *messages.NodeWorkloads, 100)
	agentProbe(r, "n1", told)
	agentProbe(r, "n2", told)
	c := &readCounter{Memory: r.store, counts: map[string]int{}}
	r.ctl = New(r.sys, r.cfg, r.calls, c, r.rec)
	must(t, r.ctl.Start())
	queued := map[string][]*messages.NodeWorkloads{}
	next := func(node string) *messages.NodeWorkloads {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for len(queued[node]) == 0 {
			select {
			case m := <-told:
				queued[m.Node] = append(queued[m.Node], m)
			case <-deadline:
				t.Fatalf("the agent of %s was told nothing", node)
			}
		}
		m := queued[node][0]
		queued[node] = queued[node][1:]
		return m
	}
	first := map[string]*messages.NodeWorkloads{"n1": next("n1"), "n2": next("n2")}

	// n1's agent announces itself, nothing applied since: the same state,
	// not read again.
	r.sys.Root.Send(r.pid(nodePrefix+"n1"), &messages.AgentStarted{Node: "n1"})
	if m := next("n1"); !proto.Equal(m, first["n1"]) {
		t.Fatalf("n1's agent told %v on its announcement, want the restore's %v", m, first["n1"])
	}
	if got := c.get("WorkloadsOn n1"); got != 0 {
		t.Fatalf("n1's node actor read its workloads %d times, want 0", got)
	}
	// A change applied since (its own tell first): n2's agent gets the
	// store's state now, read for it.
	r.workload("w3", "n2", "v1")
	applied := next("n2")
	if applied.Revision <= first["n2"].Revision {
		t.Fatalf("n2's agent told revision %d after a change, want more than %d", applied.Revision, first["n2"].Revision)
	}
	reads := c.get("WorkloadsOn n2")
	r.sys.Root.Send(r.pid(nodePrefix+"n2"), &messages.AgentStarted{Node: "n2"})
	if m := next("n2"); !proto.Equal(m, applied) {
		t.Fatalf("n2's agent told %v on its announcement after a change, want the store's %v", m, applied)
	}
	if got := c.get("WorkloadsOn n2"); got != reads+1 {
		t.Fatalf("n2's node actor read its workloads %d times for the announcement, want 1", got-reads)
	}
	// Announced again, n1 reads: the restore's state is sent only once.
	r.sys.Root.Send(r.pid(nodePrefix+"n1"), &messages.AgentStarted{Node: "n1"})
	r.eventually("n1's node actor read its workloads", func() bool { return c.get("WorkloadsOn n1") == 1 })
}
