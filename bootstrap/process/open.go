package process

// Opening a data directory: its cloud, then (durable only) its store,
// checked against the cloud and the node directories first.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud/sim"
)

// open creates the data directory and opens the store and the cloud,
// durable ones when asked.
func (e *Embedded) open() error {
	cfg := e.cfg
	kind, err := cloudKind(cfg.Cloud)
	if err != nil {
		return err
	}
	e.kind = kind
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("embedded: data directory: %w", err)
	}
	if !cfg.Durable {
		e.Store = store.NewMemory()
		return e.openCloud()
	}
	// The lock first: nothing in the directory is read or written before.
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	e.lock = lock
	if err := checkCloudKind(cfg.DataDir, kind); err != nil {
		return err
	}
	if err := e.openCloud(); err != nil {
		return err
	}
	if err := e.openStore(); err != nil {
		if e.kind != CloudSim {
			// The loop cloud's directory is released for the next start,
			// a CSI driver's connections closed; the sim is left as it is
			// (a refused start changes nothing).
			return errors.Join(err, e.Account.Close())
		}
		return err
	}
	return nil
}

// openCloud opens the cloud of e.kind (the sim's state is durable only
// when the Embedded is; the loop cloud's and a CSI driver's always are).
func (e *Embedded) openCloud() error {
	cfg := e.cfg
	switch e.kind {
	case CloudLoop:
		a, err := openLoop(cfg.DataDir, cfg.Loop)
		if err != nil {
			return err
		}
		e.Account = a
		return nil
	case CloudCSI:
		return e.openCSI()
	}
	sc := cfg.Sim
	if sc.ContentDir == "" {
		sc.ContentDir = filepath.Join(cfg.DataDir, "cloud")
	}
	if !cfg.Durable {
		e.Cloud = sim.New(sc)
		e.Account = simAccount{e.Cloud}
		return nil
	}
	if err := os.MkdirAll(sc.ContentDir, 0o700); err != nil {
		return err
	}
	sc.StatePath = filepath.Join(cfg.DataDir, simStateFile)
	cl, err := sim.Open(sc)
	if err != nil {
		return err
	}
	e.Cloud, e.Account = cl, simAccount{cl}
	return nil
}

// openStore opens the durable store once it has checked it against the
// cloud and the node directories (identity.go), or rebuilds it.
func (e *Embedded) openStore() error {
	cfg := e.cfg
	ev, err := gatherEvidence(e.nodesDir(), e.Account)
	if err != nil {
		return err
	}
	path := filepath.Join(cfg.DataDir, StoreFile)
	var st *store.Bolt
	var id string
	if cfg.RebuildStore {
		var rep RebuildReport
		st, id, rep, err = rebuildStore(path, e.Account, ev, e.Mounter)
		if err != nil {
			return fmt.Errorf("rebuilding %s: %w", path, err)
		}
		e.Rebuilt = &rep
		e.logRebuild(path, rep)
	} else if st, id, err = openTrusted(path, ev, cfg.AcceptRollback); err != nil {
		return err
	}
	e.Store, e.bolt, e.identity = st, st, id
	return claim(e.Account, ev, id)
}

// openCSI dials the CSI driver of Config.CSI, for the nodes its node
// plugins serve: one each.
func (e *Embedded) openCSI() error {
	if n := len(e.cfg.CSI.nodeSockets()); e.cfg.Nodes != n {
		return fmt.Errorf("embedded: a CSI node plugin serves one node: Nodes must be %d (one per node plugin socket), not %d", n, e.cfg.Nodes)
	}
	a, warn, err := openCSI(e.cfg.DataDir, e.cfg.CSI)
	if err != nil {
		return err
	}
	if warn != "" {
		e.Log.Warn(warn)
	}
	e.Account = a
	return nil
}
