package metrics

import (
	"context"
	"time"

	"github.com/tether/tether/cloud"
)

// Method label values of tether_cloud_calls_total.
const (
	methodInstanceID         = "instance_id"
	methodAttach             = "attach"
	methodDetach             = "detach"
	methodVolumesAreAttached = "volumes_are_attached"
	methodInstanceVolumes    = "instance_volumes"
	methodInstanceIDs        = "instance_ids"
)

// Result label values.
const (
	resultOK    = "ok"
	resultError = "error"
)

// cloudResult is "ok" or the error's class, so a dashboard can tell
// throttling from attach conflicts without parsing messages.
func cloudResult(err error) string {
	if err == nil {
		return resultOK
	}
	return cloud.Classify(err).String()
}

// InstrumentProvider returns a Provider that records every call of p
// (tether_cloud_calls_total, tether_cloud_call_seconds) and otherwise
// behaves exactly like p: same answers, same errors, same BatchSize. With a
// nil m (or a nil p) it returns p itself.
func InstrumentProvider(p cloud.Provider, m *Metrics) cloud.Provider {
	if m == nil || p == nil {
		return p
	}
	return &provider{p: p, m: m}
}

type provider struct {
	p cloud.Provider
	m *Metrics
}

func (i *provider) record(method string, start time.Time, err error) {
	i.m.CloudCall(method, cloudResult(err), time.Since(start))
}

func (i *provider) InstanceID(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	start := time.Now()
	id, err := i.p.InstanceID(ctx, node)
	i.record(methodInstanceID, start, err)
	return id, err
}

func (i *provider) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	start := time.Now()
	dev, err := i.p.Attach(ctx, vol, inst)
	i.record(methodAttach, start, err)
	return dev, err
}

func (i *provider) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	start := time.Now()
	err := i.p.Detach(ctx, vol, inst)
	i.record(methodDetach, start, err)
	return err
}

func (i *provider) VolumesAreAttached(ctx context.Context, query map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	start := time.Now()
	res, err := i.p.VolumesAreAttached(ctx, query)
	i.record(methodVolumesAreAttached, start, err)
	return res, err
}

func (i *provider) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	start := time.Now()
	res, err := i.p.InstanceVolumes(ctx, insts)
	i.record(methodInstanceVolumes, start, err)
	return res, err
}

// InstanceIDs implements cloud.InstanceResolver: recorded if the wrapped
// provider resolves in batches (else cloud.Unsupported, not a call).
func (i *provider) InstanceIDs(ctx context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	if _, ok := i.p.(cloud.InstanceResolver); !ok {
		return nil, cloud.Unsupported(methodInstanceIDs)
	}
	start := time.Now()
	res, err := cloud.ResolveInstances(ctx, i.p, nodes)
	i.record(methodInstanceIDs, start, err)
	return res, err
}

func (i *provider) BatchSize() int { return i.p.BatchSize() }

// Listing implements cloud.Lister: the wrapped provider's.
func (i *provider) Listing() cloud.Listing { return cloud.ListingOf(i.p) }

// MountOperation records one mount operation of a node agent ("stage",
// "unstage", "publish", "unpublish"): tether_operations_total{op, result}
// with result "ok" or "error", and tether_operation_seconds{op}. It has
// the shape node/mount.Observed reports with. A nil m records nothing.
func (m *Metrics) MountOperation(op string, err error, d time.Duration) {
	result := resultOK
	if err != nil {
		result = resultError
	}
	m.Operation(op, result, d)
}
