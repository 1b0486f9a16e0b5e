package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// tether bench --distributed: the same shape run twice in one invocation,
// first embedded (Run: one process) and then distributed (a
// bootstrap/process/distributed.Fleet: etcd, the cloud service, Controllers
// members and one agent per node, each a process of Binary on loopback),
// through the same phases as far as they apply across processes, each
// timed until the ground truth shows it done, and each distributed phase
// set against the embedded one (ratio_to_embedded). Beside each
// distributed phase: etcd's requests by method (its own counters), its WAL
// fsyncs, the members' cloud calls, each member's CPU time and peak RSS,
// and the members' lease lapses.
//
// The distributed side's ground truth is the embedded side's: the cloud's
// attachments as its change feed gives them (the cloud service's watch),
// and the mounts on each node's disk (scanned: the agents are other
// processes), never tether's report of its own work.

// DistConfig of a distributed bench run.
type DistConfig struct {
	// Config is the shape and the embedded side's settings; the
	// distributed side gets the same volumes, nodes, attach limit, cloud
	// latency, sync period and phase timeout. Its mounter is symlink (the
	// agents' processes share no mount table); MachinesDir does not
	// apply.
	Config
	// Controllers is how many members run (1 to 9).
	Controllers int
	// Binary is the tether executable every process runs (tether bench
	// passes its own: os.Executable).
	Binary string
	// MemberProfiles, if set, is a directory that receives a CPU profile
	// of every member over every distributed phase:
	// <phase>.controller-<i>.pprof.
	MemberProfiles string
}

// MaxDistNodes bounds DistConfig.Nodes: each node is an agent process
// (about 30 MB).
const MaxDistNodes = 500

// Validate names what is wrong with c.
func (c DistConfig) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	switch {
	case c.Controllers < 1 || c.Controllers > 9:
		return fmt.Errorf("bench: --controllers %d: want 1 to 9 (each member is a process)", c.Controllers)
	case c.Nodes > MaxDistNodes:
		return fmt.Errorf("bench: --nodes %d: with --distributed want at most %d (each node's agent is a process)", c.Nodes, MaxDistNodes)
	case c.Mounter != "symlink":
		return fmt.Errorf("bench: --mounter %s: with --distributed the agents mount with symlinks (each is a process of its own; bind mounts would share this host's mount table)", c.Mounter)
	case c.MachinesDir != "":
		return errors.New("bench: --machines-dir: not with --distributed (each agent's node directory is in the fleet's directory)")
	case c.Binary == "":
		return errors.New("bench: --distributed needs the tether binary the processes run")
	}
	if c.MemberProfiles != "" {
		if st, err := os.Stat(c.MemberProfiles); err != nil || !st.IsDir() {
			return fmt.Errorf("bench: --cpuprofile-members %q: want an existing directory", c.MemberProfiles)
		}
	}
	return nil
}

// DistResult is a distributed run: both sides of the same shape.
type DistResult struct {
	Volumes            int     `json:"volumes"`
	Nodes              int     `json:"nodes"`
	Controllers        int     `json:"controllers"`
	AttachLimit        int     `json:"attach_limit"`
	CloudLatencyMillis float64 `json:"cloud_latency_ms"`
	SyncPeriodSeconds  float64 `json:"sync_period_seconds"`
	// Embedded is tether bench's result for the same shape, run first.
	Embedded *Result `json:"embedded"`
	// Distributed is the fleet's.
	Distributed DistSide `json:"distributed"`
}

// DistSide is the distributed fleet's run.
type DistSide struct {
	// StartSeconds: the fleet's processes started and every node ready,
	// before the first phase (not a phase: the embedded side has none).
	StartSeconds float64     `json:"start_seconds"`
	Phases       []DistPhase `json:"phases"`
	// LeaseLapses: members that lost their etcd lease while alive, over
	// the whole run (their logs say so); 0 is the acceptance.
	LeaseLapses int `json:"lease_lapses"`
	// Dir is the fleet's directory, kept (logs of every process) when the
	// run failed; "" once removed.
	Dir string `json:"dir,omitempty"`
}

// DistPhase is one phase of the distributed side: the embedded Phase's
// fields where they apply (actor messages are counted inside one process
// only, so messages and baseline_ratio are the embedded side's alone),
// and what crossing processes costs.
type DistPhase struct {
	Name string `json:"name"`
	// Applicable is false for a phase that has no distributed form
	// (Note says why); its other fields are then zero.
	Applicable bool    `json:"applicable"`
	Seconds    float64 `json:"seconds"`
	// RatioToEmbedded: Seconds over the embedded side's same phase in the
	// same run (null when either did not run it).
	RatioToEmbedded *float64 `json:"ratio_to_embedded"`
	// Documents: the documents the phase applied or deleted (the volume
	// operations asked of tether); 0 for a phase that asks none.
	Documents int `json:"documents"`
	// StoreRequests: etcd's requests during the phase.
	StoreRequests StoreRequests `json:"store_requests"`
	// CloudCalls by method, as the members counted their calls.
	CloudCalls map[string]int `json:"cloud_calls"`
	// Fsyncs: etcd's WAL fsyncs.
	Fsyncs int64 `json:"fsyncs"`
	// Members: each member's CPU time and peak RSS over the phase (the
	// slot's processes added up where the phase restarted them).
	Members []ProcStats `json:"members"`
	// LeaseLapses: members that lost their lease while alive during the
	// phase; LeasesExpired: leases etcd expired (a member SIGKILLed in
	// the restart phase leaves its lease to expire: expected there).
	LeaseLapses   int   `json:"lease_lapses"`
	LeasesExpired int64 `json:"leases_expired"`
	// NodesNotReady: in restart, the nodes the API showed NotReady at any
	// moment of the wait (the members' node actors judged them so); 0
	// elsewhere.
	NodesNotReady int    `json:"nodes_not_ready"`
	Note          string `json:"note,omitempty"`
}

// StoreRequests are etcd's requests over a phase, by its own counters
// (grpc_server_msg_received_total of its KV, Lease and Watch services).
type StoreRequests struct {
	Total int64 `json:"total"`
	// KV: Range, Txn, Put, DeleteRange and Compact only.
	KV int64 `json:"kv"`
	// PerDocument and KVPerDocument: over Documents (null without any);
	// PerVolume: Total over the run's volumes.
	PerDocument   *float64         `json:"per_document"`
	KVPerDocument *float64         `json:"kv_per_document"`
	PerVolume     float64          `json:"per_volume"`
	ByMethod      map[string]int64 `json:"by_method"`
}

// ProcStats is one member's figures over a phase.
type ProcStats struct {
	Name         string  `json:"name"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
}

// RunDistributed runs the embedded bench, then the distributed one, for
// cfg's shape. Everything either creates is removed before it returns,
// but for the fleet's directory after a failure (its logs; the result's
// Dir). A run that fails returns what it measured with its error.
func RunDistributed(ctx context.Context, cfg DistConfig) (*DistResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &DistResult{Volumes: cfg.Volumes, Nodes: cfg.Nodes, Controllers: cfg.Controllers, AttachLimit: cfg.attachLimit(),
		CloudLatencyMillis: float64(cfg.CloudLatency) / float64(time.Millisecond), SyncPeriodSeconds: cfg.SyncPeriod.Seconds()}
	progress(cfg.Progress, "bench: the embedded side (one process)")
	emb, err := Run(ctx, cfg.Config)
	res.Embedded = emb
	if err != nil {
		return res, fmt.Errorf("embedded side: %w", err)
	}
	progress(cfg.Progress, "bench: the distributed side (%d members, %d agents, etcd and the cloud, each a process)", cfg.Controllers, cfg.Nodes)
	err = runFleet(ctx, cfg, &res.Distributed)
	for i := range res.Distributed.Phases {
		p := &res.Distributed.Phases[i]
		for _, e := range emb.Phases {
			if e.Name == p.Name && p.Applicable && e.Seconds > 0 {
				r := p.Seconds / e.Seconds
				p.RatioToEmbedded = &r
			}
		}
	}
	if err != nil {
		return res, fmt.Errorf("distributed side: %w", err)
	}
	return res, nil
}

// progress tells w (if set) how the run goes.
func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
