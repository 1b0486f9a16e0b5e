package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	if err := r.profiles.begin(ctx); err != nil {
		return p, err
	}
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PhaseTimeout)
	defer cancel()
	t0 := time.Now()
	note, err := ph.do(withMembers(pctx, members))
	p.Seconds = time.Since(t0).Seconds()
	p.Note = note
	if err != nil {
		return p, err
	}
	etcd1, err := readEtcd(ctx, endpoint)
	if err != nil {
		return p, err
	}
	p.StoreRequests = storeRequests(etcd0, etcd1, ph.docs, r.cfg.Volumes)
	p.Fsyncs = int64(etcd1.fsyncs - etcd0.fsyncs)
	p.LeasesExpired = int64(etcd1.leasesExpired - etcd0.leasesExpired)
	if p.Members, p.CloudCalls, err = members.end(ctx); err != nil {
		return p, err
	}
	p.LeaseLapses = leaseLapses(r.f) - lapses0
	if err := r.profiles.end(ctx, ph.name); err != nil {
		return p, err
	}
	if bad := r.truth.twice(); len(bad) > 0 {
		return p, fmt.Errorf("%d volumes attached or mounted on two nodes (%s first)", len(bad), bad[0])
	}
	return p, nil
}

// The member track of the phase running, for the phases that kill
// members (their counters up to the kill are added first).
type membersKey struct{}

func withMembers(ctx context.Context, t *memberTrack) context.Context {
	return context.WithValue(ctx, membersKey{}, t)
}

// fleetStart applies V volumes and V workloads in one apply, as the
// embedded fleet_start does, until each volume is attached and mounted on
// its node.
func (r *distRun) fleetStart(ctx context.Context) (string, error) {
	docs := make([]*messages.Document, 0, 2*r.cfg.Volumes)
	for i := range r.cfg.Volumes {
		docs = append(docs, volumeDoc(volName(i)))
	}
	for i := range r.cfg.Volumes {
		n := r.nodeOf(i)
		docs = append(docs, workloadDoc(workName(i), string(n), volName(i)))
		r.truth.setWant(cloud.VolumeID(volName(i)), n)
	}
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
// matches, having detached and unmounted nothing. A node seen NotReady on
// the way fails the phase.
func (r *distRun) restart(ctx context.Context) (string, error) {
	track := ctx.Value(membersKey{}).(*memberTrack)
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
	if err := parallel(slots, r.f.StartController); err != nil { // as an operator's restart of every machine
		return "", err
	}
	started := time.Since(t0)
	if err := r.profiles.begin(ctx); err != nil { // the new processes
		return "", err
	}
	notReady := map[cloud.NodeName]bool{}
	err := waitFor(ctx, r.cfg.Progress, func() (bool, string) {
		ready, err := r.readyNodes(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, n := range r.nodes {
			if !ready[n] {
				notReady[n] = true
			}
		}
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
	})
	if err != nil {
		return "", err
	}
	a, d := r.truth.attaches.Load()-a0, r.truth.detaches.Load()-d0
	p, u := r.truth.publishes.Load()-p0, r.truth.unpublishes.Load()-u0
	note := fmt.Sprintf("%d members SIGKILLed and started again in %.2fs; during the restart: %d attaches, %d detaches, %d publishes, %d unpublishes, %d nodes seen NotReady",
		r.f.Controllers(), started.Seconds(), a, d, p, u, len(notReady))
	switch {
	case d > 0 || u > 0:
		return note, fmt.Errorf("a restart with nothing changed detached or unmounted: %s", note)
	case len(notReady) > 0:
		return note, fmt.Errorf("nodes went NotReady during the restart (%v first): %s", slices.Sorted(maps.Keys(notReady))[0], note)
	}
	return note, nil
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
	var docs []*messages.Document
	for i := 0; i < r.cfg.Volumes; i += 10 {
		n := r.nodeOf(i + 1)
		docs = append(docs, workloadDoc(workName(i), string(n), volName(i)))
		r.truth.setWant(cloud.VolumeID(volName(i)), n)
	}
	if err := r.apply(ctx, docs); err != nil {
		return "", err
	}
	if err := r.converged(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d workloads moved", len(docs)), nil
}

// teardown deletes every workload, then every volume, through the API
// (which deletes one object a call: teardownCalls at a time), until
// nothing is attached or mounted.
func (r *distRun) teardown(ctx context.Context) (string, error) {
	c, cctx, closeConn, err := r.f.API(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = closeConn() }()
	del := func(kind string, name func(int) string) error {
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		next := make(chan int)
		for range teardownCalls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if _, err := c.Delete(cctx, &messages.DeleteRequest{Kind: kind, Name: name(i)}); err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("deleting %s %s: %w", kind, name(i), err))
						mu.Unlock()
					}
				}
			}()
		}
		for i := range r.cfg.Volumes {
			next <- i
		}
		close(next)
		wg.Wait()
		return errors.Join(errs...)
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
	return fmt.Sprintf("%d workloads and %d volumes deleted, one API call each (%d at a time), in %.2fs", r.cfg.Volumes, r.cfg.Volumes, teardownCalls, deleted.Seconds()), nil
}

// teardownCalls is how many deletes teardown has in flight.
const teardownCalls = 32
