package controller

import (
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// gatedRestore is a store whose volume-restore read (StatusesWithVolume)
// waits for open: a restore that takes as long as the test says, as one of
// 100,000 volumes does.
type gatedRestore struct {
	store.Store
	gate chan struct{}
	once sync.Once
}

func (g *gatedRestore) StatusesWithVolume(v cloud.VolumeID) ([]nodestatus.Status, error) {
	<-g.gate
	return g.Store.StatusesWithVolume(v)
}

func (g *gatedRestore) open() { g.once.Do(func() { close(g.gate) }) }

// restartGated restarts the controller on a store whose volume restores
// wait until the returned store is opened (opened at cleanup in any case).
func (r *rig) restartGated() *gatedRestore {
	r.t.Helper()
	must(r.t, r.ctl.Stop(5*time.Second))
	g := &gatedRestore{Store: r.store, gate: make(chan struct{})}
	r.t.Cleanup(g.open) // runs before the rig's own cleanup stops the controller
	r.ctl = New(r.sys, r.cfg, r.calls, g, r.rec)
	must(r.t, r.ctl.Start())
	return g
}

func (r *rig) nodeReady(n cloud.NodeName) bool {
	r.t.Helper()
	st, err := r.ctl.NodeStatus(n, 5*time.Second) // through the mailbox: after every Wake sent before
	must(r.t, err)
	return st.Ready
}

// While the restarted controller restores its volumes (bulk work), no node
// is judged on heartbeats; once the restore is done, a silent agent makes
// its node NotReady after NotReadyAfter as usual.
func TestNoNotReadyWhileRestoring(t *testing.T) {
	r := newRig(t)
	r.oneAttached()
	notReadyAfter := r.cfg.Node.NotReadyAfter
	g := r.restartGated()
	for range 3 { // three NotReadyAfter periods without a heartbeat
		r.clk.Advance(notReadyAfter)
		if !r.nodeReady("n1") {
			t.Fatalf("node n1 NotReady while the controller was still restoring")
		}
	}
	g.open()
	r.eventually("v1 restored", func() bool {
		st, err := r.ctl.VolumeStatus("v1", time.Second)
		return err == nil && st.Restored
	})
	r.clk.Advance(notReadyAfter)
	r.eventually("n1 NotReady once the restore is over and its agent stays silent", func() bool { return !r.nodeReady("n1") })
}

// A restore that never ends holds liveness back for RestoreGrace only.
func TestRestoreGraceIsBounded(t *testing.T) {
	r := newRig(t)
	r.oneAttached()
	r.restartGated() // never opened until cleanup
	r.clk.Advance(r.cfg.RestoreGrace - time.Second)
	if !r.nodeReady("n1") {
		t.Fatalf("node n1 NotReady before RestoreGrace")
	}
	r.clk.Advance(time.Second + r.cfg.Node.NotReadyAfter)
	r.eventually("n1 NotReady after RestoreGrace and NotReadyAfter", func() bool { return !r.nodeReady("n1") })
}
