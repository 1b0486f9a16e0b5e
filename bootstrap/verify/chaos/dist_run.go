package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/cloud"
	cloudremote "github.com/tether/tether/cloud/remote"
)

// DistributedConfig of a chaos run across processes (RunDistributed).
// Of Config, Break may name one of DistributedBreaks; the cloud limit
// does not apply.
type DistributedConfig struct {
	Config
	// Controllers is how many controller members run (default 3).
	Controllers int
	// Binary is the tether executable the processes run (default: this
	// process's own).
	Binary string
}

// DistributedBreaks are the rules a distributed run can break on
// purpose, behind tether's back through the cloud (the checker must see
// it): "I1" attaches an exclusive volume in use to a second node, "I2"
// detaches a volume mounted on its node.
var DistributedBreaks = []string{"I1", "I2"}

// DistributedDeadline is how long convergence may take once the faults of
// a distributed run stop and every process is back: Deadline, and the
// time a cluster takes to settle after members came back (their
// activations move, gossip, connections redialled with backoff).
func DistributedDeadline() time.Duration { return Deadline() + 30*time.Second }

// RunDistributed executes one chaos run on a distributed tether, each part
// in its own process on this machine (bootstrap/process/distributed.Fleet): the
// seed's plan (DistributedPlan) while workloads churn, then calm, then a
// bounded wait for convergence. The verdicts are judged at the end, on the
// timeline merged from what each process recorded where things happened:
// the cloud's changes (its watch), each agent's mount calls and each
// member's durable node status writes and events (their journals).
func RunDistributed(ctx context.Context, cfg DistributedConfig) (rep Report, err error) {
	rep = Report{Seed: cfg.Seed, KillsByKind: map[string]int{}, FaultsByKind: map[string]int{}}
	if cfg.Break != "" && !slices.Contains(DistributedBreaks, cfg.Break) {
		return rep, fmt.Errorf("chaos: cannot break %q across processes: want one of %v", cfg.Break, DistributedBreaks)
	}
	if cfg.Controllers <= 0 {
		cfg.Controllers = 3
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Binary == "" {
		if cfg.Binary, err = os.Executable(); err != nil {
			return rep, err
		}
	}
	dir, keep := cfg.DataDir, true
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tether-chaos-distributed-"); err != nil {
			return rep, err
		}
		keep = false
	}
	defer func() {
		switch {
		case keep:
		case err != nil || rep.Violations > 0 || !rep.Converged:
			fmt.Fprintf(cfg.Log, "chaos: seed %d: the fleet's directory is kept, logs and journals included: %s\n", cfg.Seed, dir)
		default:
			_ = os.RemoveAll(dir)
		}
	}()
	r, err := startDistributed(cfg, dir, &rep)
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, r.teardown()) }()
	if err := r.run(ctx); err != nil {
		return rep, fmt.Errorf("chaos: seed %d: %w", cfg.Seed, err)
	}
	return rep, nil
}

// token is a fresh bearer token for the members' APIs.
func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func startDistributed(cfg DistributedConfig, dir string, rep *Report) (*distRunner, error) {
	var nodes []cloud.NodeName
	for i := range cfg.Nodes {
		nodes = append(nodes, cloud.NodeName(fmt.Sprintf("n%d", i+1)))
	}
	f, err := distributed.StartFleet(distributed.FleetConfig{Binary: cfg.Binary, Dir: dir, Controllers: cfg.Controllers, Nodes: nodes,
		Token: token(), SyncPeriod: syncPeriod, Heartbeat: time.Second, Permissive: true, Chaos: true, RemoteTLS: true,
		CloudTimeout: cloudTimout, PrepareTimeout: 5 * time.Second, RetireAfter: 2 * time.Second,
		Backoff: distributed.Backoff{Initial: opBackoff.Initial, Max: opBackoff.Max}})
	if err != nil {
		return nil, err
	}
	r := &distRunner{cfg: cfg, f: f, nodes: nodes, rep: rep, tl: newTimeline(), cut: -1,
		wls: map[string]store.Workload{}, owner: map[cloud.VolumeID]string{}, created: map[string]bool{},
		down: map[cloud.NodeName]bool{}, dead: map[int]bool{}}
	if r.store, err = store.OpenEtcd(store.EtcdConfig{Endpoints: f.Etcd.Endpoints(), Prefix: "/tether/store/"}); err != nil {
		return nil, errors.Join(err, f.Stop())
	}
	if err := r.dialCloud(); err != nil {
		return nil, errors.Join(err, r.store.Close(), f.Stop())
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stopWatch = cancel
	r.watched = make(chan struct{})
	go func() {
		defer close(r.watched)
		r.tl.watch(ctx, f.CloudAddr())
	}()
	if err := r.tl.waitSnapshot(1, watchReady); err != nil {
		return nil, errors.Join(err, r.teardown())
	}
	return r, nil
}

// dialCloud connects (again) the runner's own client of the cloud.
func (r *distRunner) dialCloud() error {
	if r.cloud != nil {
		_ = r.cloud.Close()
	}
	c, err := cloudremote.Dial(r.f.CloudAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("chaos: the cloud: %w", err)
	}
	r.cloud = c
	return nil
}

// run: setup, the plan, calm, convergence, and the verdicts on the
// timeline once every process has stopped.
func (r *distRunner) run(ctx context.Context) error {
	if err := r.setup(); err != nil {
		return err
	}
	if err := r.faults(ctx); err != nil {
		return err
	}
	if err := r.calm(); err != nil {
		return err
	}
	if r.cfg.Break != "" {
		if err := r.sabotage(r.cfg.Break); err != nil {
			return err
		}
	}
	limit := r.cfg.Converge
	if limit <= 0 {
		limit = DistributedDeadline()
	}
	t0 := time.Now()
	i5 := waitConverged(ctx, limit, r.diff)
	r.rep.Converged, r.rep.ConvergeSeconds = len(i5) == 0, time.Since(t0).Seconds()
	return r.judge(i5)
}

// judge stops every process (their journals are then complete), merges
// the timeline and judges it.
func (r *distRunner) judge(i5 []Violation) error {
	r.stopWatch()
	<-r.watched
	err := r.f.Stop()
	r.stopped = true
	journals, jerr := r.f.JournalFiles()
	recs, restarts, merr := r.tl.merge(journals)
	chk := &Checker{}
	for _, rec := range recs {
		chk.addStamped(rec)
	}
	for i := range i5 {
		h := chk.History(i5[i].Volume)
		i5[i].History = h[max(0, len(h)-keep):]
	}
	rep := r.rep
	rep.Restarts = r.restarts + restarts
	rep.ForcedDetaches, rep.MountCalls = chk.ForcedDetaches(), chk.MountCalls()
	rep.Found = append(append(chk.Violations(), r.judgeOutsiders()...), i5...)
	rep.Violations = len(rep.Found)
	return errors.Join(err, jerr, merr)
}

// teardown stops whatever still runs.
func (r *distRunner) teardown() error {
	var errs []error
	if !r.stopped {
		r.stopWatch()
		<-r.watched
		errs = append(errs, r.f.Stop())
	}
	if r.cloud != nil {
		errs = append(errs, r.cloud.Close())
	}
	errs = append(errs, r.store.Close())
	return errors.Join(errs...)
}
