package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// distPhase is one phase of the distributed side: do (nil when the phase
// has no distributed form, notApplicable saying why) and the documents it
// asks of tether.
type distPhase struct {
	name          string
	docs          int
	do            func(context.Context) (string, error)
	notApplicable string
}

// phases are the embedded side's phases (phaseNames), in its order.
func (r *distRun) phases() []distPhase {
	v := r.cfg.Volumes
	out := []distPhase{
		{name: "fleet_start", docs: 2 * v, do: r.fleetStart},
		{name: "verify", notApplicable: "a member's sync actor runs its passes on its own period (--sync-period) and takes no outside request to run one: there is nothing to time from outside but the period"},
		{name: "restart", do: r.restart},
		{name: "node_loss", do: r.nodeLoss},
		{name: "churn", docs: (v + 9) / 10, do: r.churn},
		{name: "teardown", docs: 2 * v, do: r.teardown},
	}
	for i, p := range out {
		if p.name != phaseNames[i] {
			panic("bench: the distributed phases are not the embedded side's") // a programming error
		}
	}
	return out
}

// phase runs one phase and measures it.
func (r *distRun) phase(ctx context.Context, ph distPhase) (DistPhase, error) {
	p := DistPhase{Name: ph.name, Applicable: ph.do != nil, Documents: ph.docs, Note: ph.notApplicable, CloudCalls: map[string]int{},
		StoreRequests: StoreRequests{ByMethod: map[string]int64{}}}
	if ph.do == nil {
		p.Documents = 0
		return p, nil
	}
	progress(r.cfg.Progress, "bench: distributed %s...", ph.name)
	endpoint := r.f.Etcd.Endpoints()[0]
	etcd0, err := readEtcd(ctx, endpoint)
	if err != nil {
		return p, err
	}
	members, err := newMemberTrack(ctx, r.f)
	if err != nil {
		return p, err
	}
	lapses0 := leaseLapses(r.f)
	r.profiles.begin(ctx)
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PhaseTimeout)
	defer cancel()
	t0 := time.Now()
	note, err := ph.do(withPhase(pctx, members, &p))
	p.Seconds = time.Since(t0).Seconds()
	p.Note = note
	// A phase that failed is measured all the same: what it cost up to
	// its failure is part of the report.
	etcd1, serr := readEtcd(ctx, endpoint)
	if serr == nil {
		p.StoreRequests = storeRequests(etcd0, etcd1, ph.docs, r.cfg.Volumes)
		p.Fsyncs = int64(etcd1.fsyncs - etcd0.fsyncs)
		p.LeasesExpired = int64(etcd1.leasesExpired - etcd0.leasesExpired)
	}
	var merr error
	if p.Members, p.CloudCalls, merr = members.end(ctx); p.CloudCalls == nil {
		p.CloudCalls = map[string]int{}
	}
	p.LeaseLapses = leaseLapses(r.f) - lapses0
	if len(members.unread) > 0 {
		p.Note += fmt.Sprintf("; cloud calls not exact, metrics unreadable at some point: %s", strings.Join(members.unread, "; "))
	}
	lost, perr := r.profiles.end(ctx, ph.name)
	if len(lost) > 0 {
		p.Note += fmt.Sprintf("; no CPU profile from %s", strings.Join(lost, ", "))
	}
	if err != nil {
		return p, err
	}
	if err := errors.Join(serr, merr, perr); err != nil {
		return p, err
	}
	if bad := r.truth.twice(); len(bad) > 0 {
		return p, fmt.Errorf("%d volumes attached or mounted on two nodes (%s first)", len(bad), bad[0])
	}
	return p, nil
}

// The phase running, for the phases that kill members (their counters up
// to the kill are added first) or count what they see on the way.
type phaseKey struct{}

type running struct {
	members *memberTrack
	phase   *DistPhase
}

func withPhase(ctx context.Context, t *memberTrack, p *DistPhase) context.Context {
	return context.WithValue(ctx, phaseKey{}, running{t, p})
}

// fleetStart applies V volumes and V workloads in one apply, as the
// embedded fleet_start does, until each volume is attached and mounted on
// its node.
func (r *distRun) fleetStart(ctx context.Context) (string, error) {
	docs := startDocs(r.cfg.Volumes, r.nodeOf, r.truth)
	t0 := time.Now()
	if err := r.apply(ctx, docs); err != nil {
		return "", err
	}
	applied := time.Since(t0)
	if err := r.converged(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("apply of %d documents returned in %.2fs", len(docs), applied.Seconds()), nil
}

func (r *distRun) nodeOf(i int) cloud.NodeName { return r.nodes[i%len(r.nodes)] }

// restart SIGKILLs every member and starts them all again at once; a
// new member joins once it reached the members registered before it, and
// the killed ones stay registered until their leases lapse
// (--member-ttl), which the phase's time includes. Done when every
// member's volume actors hold every volume Attached again (their
// tether_attachments), every node is ready, and the ground truth still
// matches, having detached and unmounted nothing. Nodes seen NotReady on
// the way are counted (DistPhase.NodesNotReady).
func (r *distRun) restart(ctx context.Context) (string, error) {
	run := ctx.Value(phaseKey{}).(running)
	track := run.members
	a0, d0, p0, u0 := r.truth.attaches.Load(), r.truth.detaches.Load(), r.truth.publishes.Load(), r.truth.unpublishes.Load()
	for i := range r.f.Controllers() {
		if err := track.retire(ctx, i); err != nil {
			return "", err
		}
		if err := r.f.KillController(i); err != nil {
			return "", err
		}
	}
	t0 := time.Now()
	slots := make([]int, r.f.Controllers())
	for i := range slots {
		slots[i] = i
	}
	var mu sync.Mutex
	var failed []string
	start := func(i int) error { // as a supervisor (systemd's Restart=on-failure) restarts a machine's member
		var err error
		for range startTries {
			if err = r.f.StartController(i); err == nil {
				return nil
			}
			mu.Lock()
			failed = append(failed, fmt.Sprintf("controller-%d: %v", i, firstLine(err)))
			mu.Unlock()
		}
		return err
	}
	if err := parallel(slots, start); err != nil {
		return "", err
	}
	started := time.Since(t0)
	r.profiles.begin(ctx) // the new processes
	notReady := map[cloud.NodeName]bool{}
	// The node list is read from the store (its reads count among the
	// phase's): a few times a second, not at waitFor's pace.
	err := waitFor(ctx, r.cfg.Progress, paced(restartPoll, func() (bool, string) {
		return r.restarted(ctx, run.phase, notReady)
	}))
	if err != nil {
		return "", err
	}
	a, d := r.truth.attaches.Load()-a0, r.truth.detaches.Load()-d0
	p, u := r.truth.publishes.Load()-p0, r.truth.unpublishes.Load()-u0
	note := fmt.Sprintf("%d members SIGKILLed and started again in %.2fs; during the restart: %d attaches, %d detaches, %d publishes, %d unpublishes, %d nodes seen NotReady",
		r.f.Controllers(), started.Seconds(), a, d, p, u, len(notReady))
	if len(failed) > 0 {
		note += fmt.Sprintf("; %d starts failed and were tried again: %s", len(failed), strings.Join(failed, "; "))
	}
	if len(notReady) > 0 {
		note += fmt.Sprintf(" (%v first)", slices.Sorted(maps.Keys(notReady))[0])
	}
	if d > 0 || u > 0 {
		return note, fmt.Errorf("a restart with nothing changed detached or unmounted: %s", note)
	}
	return note, nil
}

// restartPoll: how often restart asks whether it is done.
const restartPoll = 250 * time.Millisecond

// paced is done, asked at most every d: in between, its last answer.
func paced(d time.Duration, done func() (bool, string)) func() (bool, string) {
	var at time.Time
	what := "not asked yet"
	return func() (bool, string) {
		if time.Since(at) < d {
			return false, what
		}
		at = time.Now()
		ok, w := done()
		what = w
		return ok, w
	}
}

// restarted reports whether a restart is done: every node ready (those
// seen NotReady are added to notReady and counted in p), every volume
// held Attached by the members' volume actors, and the ground truth, a
// scan of the disks included, as wanted.
func (r *distRun) restarted(ctx context.Context, p *DistPhase, notReady map[cloud.NodeName]bool) (bool, string) {
	ready, err := r.readyNodes(ctx)
	if err != nil {
		return false, err.Error()
	}
	for _, n := range r.nodes {
		if !ready[n] {
			notReady[n] = true
		}
	}
	p.NodesNotReady = len(notReady)
	if len(ready) < len(r.nodes) {
		return false, fmt.Sprintf("%d of %d nodes ready", len(ready), len(r.nodes))
	}
	states, err := attachedActors(ctx, r.f)
	if err != nil {
		return false, err.Error()
	}
	if int(states["Attached"]) < r.cfg.Volumes {
		return false, fmt.Sprintf("the members' volume actors hold %v attachments, want %d Attached", states, r.cfg.Volumes)
	}
	if err := r.scan(); err != nil {
		return false, err.Error()
	}
	ok, _ := r.truth.matches()
	return ok, r.left()
}

// nodeLoss stops the agent of every tenth node, terminates its instance
// (which loses its attachments) and starts both again, as the embedded
// node_loss does; done when every volume is attached and mounted again.
func (r *distRun) nodeLoss(ctx context.Context) (string, error) {
	var nodes []cloud.NodeName
	var lost []cloud.InstanceID
	for i := 0; i < len(r.nodes); i += 10 {
		in, ok := r.cloud.InstanceOf(r.nodes[i])
		if !ok {
			return "", fmt.Errorf("no instance backs node %s", r.nodes[i])
		}
		nodes, lost = append(nodes, r.nodes[i]), append(lost, in)
	}
	if err := parallel(nodes, r.f.StopAgent); err != nil {
		return "", err
	}
	if err := parallel(lost, r.cloud.Terminate); err != nil {
		return "", err
	}
	if err := parallel(lost, r.cloud.Start); err != nil {
		return "", err
	}
	if err := parallel(nodes, r.f.StartAgent); err != nil {
		return "", err
	}
	if err := r.converged(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d instances terminated and started, with their agents' processes", len(lost)), nil
}

// churn moves every tenth workload to the next node.
func (r *distRun) churn(ctx context.Context) (string, error) {
	docs := churnDocs(r.cfg.Volumes, r.nodeOf, r.truth)
	if err := r.apply(ctx, docs); err != nil {
		return "", err
	}
	if err := r.converged(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d workloads moved", len(docs)), nil
}

// teardown deletes every workload, then every volume, through the API,
// as the embedded side does: a Delete call naming them all, one store
// transaction, for each kind; then waits until nothing is attached or
// mounted.
func (r *distRun) teardown(ctx context.Context) (string, error) {
	c, cctx, closeConn, err := r.f.API(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = closeConn() }()
	del := func(kind string, name func(int) string) error {
		names := make([]string, r.cfg.Volumes)
		for i := range names {
			names[i] = name(i)
		}
		if _, err := c.Delete(cctx, &messages.DeleteRequest{Kind: kind, Name: names[0], Names: names[1:]}); err != nil {
			return fmt.Errorf("deleting %d %ss: %w", len(names), kind, err)
		}
		return nil
	}
	t0 := time.Now()
	if err := del("workload", workName); err != nil {
		return "", err
	}
	if err := del("volume", volName); err != nil {
		return "", err
	}
	deleted := time.Since(t0)
	for i := range r.cfg.Volumes {
		r.truth.setWant(cloud.VolumeID(volName(i)), "")
	}
	if err := r.converged(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d workloads and %d volumes deleted, one Delete call of each kind, in %.2fs", r.cfg.Volumes, r.cfg.Volumes, deleted.Seconds()), nil
}

// startTries: how many times restart starts a member whose process
// exits before it is ready (each failure is in the phase's note).
const startTries = 3

// firstLine is err's first line (a process's error carries its log's tail).
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
