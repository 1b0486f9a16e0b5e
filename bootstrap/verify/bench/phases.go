package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	par "github.com/tether/tether/actors/runtime/parallel"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

func volName(i int) string                 { return fmt.Sprintf("v%06d", i) }
func workName(i int) string                { return fmt.Sprintf("w%06d", i) }
func (r *run) nodeOf(i int) cloud.NodeName { return r.nodes[i%len(r.nodes)] }

// startDocs are fleet_start's documents, every volume then every
// workload (workload i uses volume i, on node i mod N), each volume wanted
// on its workload's node in t.
func startDocs(volumes int, nodeOf func(int) cloud.NodeName, t *truth) []*messages.Document {
	docs := make([]*messages.Document, 0, 2*volumes)
	for i := range volumes {
		docs = append(docs, volumeDoc(volName(i)))
	}
	for i := range volumes {
		n := nodeOf(i)
		docs = append(docs, workloadDoc(workName(i), string(n), volName(i)))
		t.setWant(cloud.VolumeID(volName(i)), n)
	}
	return docs
}

// churnDocs are churn's documents: every tenth workload on the next node,
// its volume wanted there in t.
func churnDocs(volumes int, nodeOf func(int) cloud.NodeName, t *truth) []*messages.Document {
	var docs []*messages.Document
	for i := 0; i < volumes; i += 10 {
		n := nodeOf(i + 1)
		docs = append(docs, workloadDoc(workName(i), string(n), volName(i)))
		t.setWant(cloud.VolumeID(volName(i)), n)
	}
	return docs
}

// fleetStart applies V volumes and V workloads (workload i uses volume i,
// on node i mod N) in one apply, and waits until each volume is attached
// and mounted on its node.
func (r *run) fleetStart(ctx context.Context) (string, error) {
	docs := startDocs(r.cfg.Volumes, r.nodeOf, r.truth)
	t0 := time.Now()
	if err := r.client.apply(ctx, docs); err != nil {
		return "", err
	}
	applied := time.Since(t0)
	if err := r.converged(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("apply of %d documents returned in %.2fs", len(docs), applied.Seconds()), nil
}

// verify runs one verification pass of the sync actor: the first that
// starts after it is asked (one already running finishes first).
func (r *run) verify(ctx context.Context) (string, error) {
	ch := make(chan *messages.SyncPassFinished, 8)
	sub := r.e.System.EventStream.Subscribe(func(ev any) {
		if m, ok := ev.(*messages.SyncPassFinished); ok {
			select {
			case ch <- m:
			default:
			}
		}
	})
	defer r.e.System.EventStream.Unsubscribe(sub)
	asked := time.Now().UnixNano()
	r.e.Ctl().SyncNow()
	for {
		select {
		case m := <-ch:
			if m.StartedUnixNano < asked || m.Partial {
				continue // a pass that was running already, or one over a few nodes
			}
			want := (len(r.nodes) + r.res.BatchSize - 1) / r.res.BatchSize
			note := fmt.Sprintf("%d nodes in %d calls (ceil(N/batch) = %d), %d errors, %d lost, %d unknown", m.Nodes, m.Calls, want, m.Errors, m.Lost, m.Dangling)
			if int(m.Calls) != want {
				return note, fmt.Errorf("a sync pass made %d calls, want ceil(%d/%d) = %d", m.Calls, len(r.nodes), r.res.BatchSize, want)
			}
			return note, nil
		case <-ctx.Done():
			return "", errors.New("no sync pass finished before the phase timeout")
		}
	}
}

// restart stops the whole process state (API, agents, controller, store,
// cloud) and starts it again on the same data directory; done when the
// controller has restored every volume, every agent is ready and the
// ground truth still matches, having changed nothing.
func (r *run) restart(ctx context.Context) (string, error) {
	a0, d0, p0, u0 := r.truth.attaches.Load(), r.truth.detaches.Load(), r.truth.publishes.Load(), r.truth.unpublishes.Load()
	if err := r.stop(); err != nil {
		return "", err
	}
	t0 := time.Now()
	if err := r.start(); err != nil {
		return "", err
	}
	started := time.Since(t0)
	pending := map[cloud.NodeName]bool{}
	for _, n := range r.nodes {
		pending[n] = true
	}
	err := waitFor(ctx, r.cfg.Progress, func() (bool, string) {
		if !r.e.Ctl().Restored() {
			return false, "the controller has not restored every volume"
		}
		for n := range pending {
			if st, err := r.e.Agents[n].Status(time.Second); err == nil && st.Ready {
				delete(pending, n)
			}
		}
		if len(pending) > 0 {
			return false, fmt.Sprintf("%d agents not ready", len(pending))
		}
		ok, v := r.truth.matches()
		return ok, fmt.Sprintf("volume %q: %s", v, r.describe(v))
	})
	if err != nil {
		return "", err
	}
	a, d := r.truth.attaches.Load()-a0, r.truth.detaches.Load()-d0
	p, u := r.truth.publishes.Load()-p0, r.truth.unpublishes.Load()-u0
	note := fmt.Sprintf("started in %.2fs; during the restart: %d attaches, %d detaches, %d publishes, %d unpublishes", started.Seconds(), a, d, p, u)
	if d > 0 || u > 0 {
		return note, fmt.Errorf("a restart with nothing changed detached or unmounted: %s", note)
	}
	return note, nil
}

// nodeLoss terminates every tenth instance (they lose their attachments,
// and their agents die with them) and starts them again, agents and all;
// done when every volume is attached again.
func (r *run) nodeLoss(ctx context.Context) (string, error) {
	var lost []cloud.InstanceID
	var nodes []cloud.NodeName
	for i := 0; i < len(r.nodes); i += 10 {
		in, ok := r.e.Cloud.InstanceOf(r.nodes[i])
		if !ok {
			return "", fmt.Errorf("no instance backs node %s", r.nodes[i])
		}
		lost, nodes = append(lost, in), append(nodes, r.nodes[i])
	}
	for _, n := range nodes { // Embedded's agents one at a time
		if err := r.e.StopAgent(n); err != nil {
			return "", err
		}
	}
	if err := parallel(lost, r.e.Cloud.Terminate); err != nil {
		return "", err
	}
	if err := parallel(lost, r.e.Cloud.Start); err != nil {
		return "", err
	}
	for _, n := range nodes {
		if err := r.e.StartAgent(n); err != nil {
			return "", err
		}
	}
	if err := r.converged(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d instances terminated and started, with their agents; each agent's return has its node verified at once", len(lost)), nil
}

// churn moves every tenth workload to the next node.
func (r *run) churn(ctx context.Context) (string, error) {
	docs := churnDocs(r.cfg.Volumes, r.nodeOf, r.truth)
	if err := r.client.apply(ctx, docs); err != nil {
		return "", err
	}
	if err := r.converged(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d workloads moved", len(docs)), nil
}

// teardown deletes every workload, then every volume (one transaction
// each, as a bulk delete), until nothing is attached or mounted.
func (r *run) teardown(ctx context.Context) (string, error) {
	uids := make([]string, r.cfg.Volumes)
	vols := make([]cloud.VolumeID, r.cfg.Volumes)
	for i := range uids {
		uids[i], vols[i] = workName(i), cloud.VolumeID(volName(i))
	}
	ctl := r.e.Ctl()
	if err := ctl.DeleteWorkloads(uids); err != nil {
		return "", err
	}
	if err := ctl.DeleteVolumes(vols); err != nil {
		return "", err
	}
	for _, v := range vols {
		r.truth.setWant(v, "")
	}
	if err := r.converged(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d workloads and %d volumes deleted", len(uids), len(vols)), nil
}

// parallel runs f on every item, a few at a time (the cloud's group
// commit shares their writes), and joins the errors.
func parallel[T any](items []T, f func(T) error) error {
	errs := make([]error, len(items))
	par.Do(len(items), 64, func(i int) { errs[i] = f(items[i]) })
	return errors.Join(errs...)
}
