package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/cloud"
	cloudremote "github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// distRun is one distributed side's state.
type distRun struct {
	cfg   DistConfig
	dir   string
	f     *distributed.Fleet
	cloud *cloudremote.Client
	nodes []cloud.NodeName
	truth *truth
	// mounted: the publish targets each node's disk showed at the last
	// scan (scan turns the difference into truth's publishes and
	// unpublishes).
	mounted  map[cloud.NodeName]map[string]bool
	lastScan time.Time
	scanTook time.Duration
	// the cloud's watch, feeding truth
	stopWatch context.CancelFunc
	watchWG   sync.WaitGroup
	watchMu   sync.Mutex
	watchErr  error
	synced    chan struct{} // closed at the first snapshot
	profiles  profiles
}

// runFleet starts the fleet, runs the phases into side and stops it.
func runFleet(ctx context.Context, cfg DistConfig, side *DistSide) (err error) {
	dir, err := os.MkdirTemp(cfg.Dir, "tether-bench-distributed-")
	if err != nil {
		return err
	}
	r := &distRun{cfg: cfg, dir: dir, truth: newTruth(), mounted: map[cloud.NodeName]map[string]bool{}, synced: make(chan struct{})}
	for i := range cfg.Nodes {
		r.nodes = append(r.nodes, cloud.NodeName(fmt.Sprintf("n%d", i+1))) // the embedded side's names
	}
	defer func() {
		err = errors.Join(err, r.stop())
		if err != nil {
			side.Dir = dir
			progress(cfg.Progress, "bench: the fleet's directory (every process's log) is kept: %s", dir)
			return
		}
		err = os.RemoveAll(dir)
	}()
	t0 := time.Now()
	if err := r.start(ctx); err != nil {
		return err
	}
	side.StartSeconds = time.Since(t0).Seconds()
	lapses0 := leaseLapses(r.f)
	defer func() { side.LeaseLapses = leaseLapses(r.f) - lapses0 }()
	for _, ph := range r.phases() {
		p, err := r.phase(ctx, ph)
		side.Phases = append(side.Phases, p)
		if err != nil {
			return fmt.Errorf("%s: %w", ph.name, err)
		}
	}
	return nil
}

// start starts the fleet, the cloud's watch and every node, and waits
// until every node is ready.
func (r *distRun) start(ctx context.Context) error {
	var err error
	r.f, err = distributed.StartFleet(distributed.FleetConfig{Binary: r.cfg.Binary, Dir: r.dir, Controllers: r.cfg.Controllers,
		Nodes: r.nodes, Token: newToken(), SyncPeriod: r.cfg.SyncPeriod, AttachLimit: r.cfg.attachLimit(),
		CloudLatency: r.cfg.CloudLatency, MemberDebug: true, Ready: 2 * time.Minute})
	if err != nil {
		return err
	}
	r.profiles = profiles{dir: r.cfg.MemberProfiles, f: r.f}
	if r.cloud, err = cloudremote.Dial(r.f.CloudAddr(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(context.Background())
	r.stopWatch = cancel
	r.watchWG.Add(1)
	go r.watch(wctx)
	ctx, cancel2 := context.WithTimeout(ctx, r.cfg.PhaseTimeout)
	defer cancel2()
	select {
	case <-r.synced:
	case <-ctx.Done():
		return fmt.Errorf("the cloud's watch gave no snapshot: %w", errors.Join(ctx.Err(), r.watchError()))
	}
	docs := make([]*messages.Document, 0, len(r.nodes))
	for _, n := range r.nodes {
		docs = append(docs, &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: string(n)}}})
	}
	if err := r.apply(ctx, docs); err != nil {
		return err
	}
	return waitFor(ctx, r.cfg.Progress, paced(restartPoll, func() (bool, string) {
		ready, err := r.readyNodes(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(ready) == len(r.nodes), fmt.Sprintf("%d of %d nodes ready", len(ready), len(r.nodes))
	}))
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// watch follows the cloud's attachments into truth until ctx ends, a
// broken watch watched again (a fresh snapshot replaces the attachments).
func (r *distRun) watch(ctx context.Context) {
	defer r.watchWG.Done()
	first := true
	for ctx.Err() == nil {
		snap := map[cloud.VolumeID][]cloud.NodeName{}
		err := r.cloud.Watch(ctx, func(ev cloudremote.Event) error {
			switch {
			case ev.Snapshot:
				snap[ev.Change.Volume] = append(snap[ev.Change.Volume], ev.Change.Node)
			case ev.Synced:
				r.truth.load(snap)
				if first {
					first = false
					close(r.synced)
				}
			default:
				r.truth.observe(ev.Change)
			}
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		r.watchMu.Lock()
		r.watchErr = err
		r.watchMu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond): // a retry delay, not a synchronization
		}
	}
}

func (r *distRun) watchError() error {
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	return r.watchErr
}

// stop stops the watch and the fleet.
func (r *distRun) stop() error {
	if r.stopWatch != nil {
		r.stopWatch()
		r.watchWG.Wait()
	}
	var errs []error
	if r.cloud != nil {
		errs = append(errs, r.cloud.Close())
	}
	if r.f != nil {
		errs = append(errs, r.f.Stop())
	}
	return errors.Join(errs...)
}

// apply sends docs as one all-or-nothing apply through a member's API, as
// tether apply does.
func (r *distRun) apply(ctx context.Context, docs []*messages.Document) error {
	c, cctx, closeConn, err := r.f.API(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = closeConn() }()
	if _, err := api.Send(cctx, c, docs); err != nil {
		return fmt.Errorf("apply of %d documents: %w", len(docs), err)
	}
	return nil
}

// readyNodes lists the nodes the API shows ready.
func (r *distRun) readyNodes(ctx context.Context) (map[cloud.NodeName]bool, error) {
	c, cctx, closeConn, err := r.f.API(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = closeConn() }()
	ready, token := map[cloud.NodeName]bool{}, ""
	for {
		res, err := c.Get(cctx, &messages.GetRequest{Kind: "nodes", Continue: token})
		if err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		for _, n := range res.Nodes {
			if n.GetStatus().GetReady() {
				ready[cloud.NodeName(n.GetSpec().GetName())] = true
			}
		}
		if token = res.Continue; token == "" {
			return ready, nil
		}
	}
}

// scan reads every node's mounts from its disk and tells truth what was
// published or unpublished since the last scan.
func (r *distRun) scan() error {
	t0 := time.Now()
	for _, n := range r.nodes {
		l, err := layout.New(r.f.NodeDir(n))
		if err != nil {
			return err
		}
		found, err := mount.Scan(l, mount.NewSymlink(l))
		if err != nil {
			return fmt.Errorf("node %s: %w", n, err)
		}
		now := map[string]bool{}
		for _, e := range found.Entries {
			if e.Kind == mount.KindPublish && e.State == mount.Mounted {
				now[e.Path] = true
			}
		}
		for p := range now {
			if !r.mounted[n][p] {
				r.truth.publish(n, p)
			}
		}
		for p := range r.mounted[n] {
			if !now[p] {
				r.truth.unpublish(n, p)
			}
		}
		r.mounted[n] = now
	}
	r.lastScan, r.scanTook = time.Now(), time.Since(t0)
	return nil
}

// converged waits until the ground truth matches what is wanted. The
// cloud's side is followed as it changes; the disks are scanned once the
// cloud's side matches, and otherwise every few seconds (at most a third
// of the time goes to scanning).
func (r *distRun) converged(ctx context.Context) error {
	return waitFor(ctx, r.cfg.Progress, func() (bool, string) {
		if err := r.watchError(); err != nil && !errors.Is(err, cloudremote.ErrWatchEnded) {
			return false, "the cloud's watch: " + err.Error()
		}
		pace := max(100*time.Millisecond, 3*r.scanTook)
		if !r.truth.attachmentsMatch() {
			pace = max(pace, 5*time.Second)
		}
		if time.Since(r.lastScan) < pace {
			return false, r.left()
		}
		if err := r.scan(); err != nil {
			return false, err.Error()
		}
		ok, _ := r.truth.matches()
		return ok, r.left()
	})
}

// left says what is not as wanted yet.
func (r *distRun) left() string {
	if ok, _ := r.truth.matches(); ok {
		return "waiting for a scan of the disks"
	}
	return r.truth.left()
}
