package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// fakeProvider answers every call with err (nil: success) and fixed values.
type fakeProvider struct {
	err   error
	calls int
}

func (f *fakeProvider) InstanceID(context.Context, cloud.NodeName) (cloud.InstanceID, error) {
	f.calls++
	return "i-1", f.err
}

func (f *fakeProvider) Attach(context.Context, cloud.VolumeID, cloud.InstanceID) (string, error) {
	f.calls++
	return "/dev/xvdb", f.err
}

func (f *fakeProvider) Detach(context.Context, cloud.VolumeID, cloud.InstanceID) error {
	f.calls++
	return f.err
}

func (f *fakeProvider) VolumesAreAttached(context.Context, map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	f.calls++
	return map[cloud.InstanceID]map[cloud.VolumeID]bool{"i-1": {"v": true}}, f.err
}

func (f *fakeProvider) InstanceVolumes(context.Context, []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	f.calls++
	return map[cloud.InstanceID]map[cloud.VolumeID]string{"i-1": {"v": "/dev/xvdb"}}, f.err
}

func (f *fakeProvider) BatchSize() int { return 7 }

// callAll calls every counted Provider method once.
func callAll(t *testing.T, p cloud.Provider, wantErr error) {
	t.Helper()
	ctx := context.Background()
	check := func(method string, err error) {
		t.Helper()
		if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
			t.Errorf("%s: err %v, want %v", method, err, wantErr)
		}
	}
	id, err := p.InstanceID(ctx, "n1")
	check("InstanceID", err)
	if id != "i-1" {
		t.Errorf("InstanceID = %q, want i-1", id)
	}
	dev, err := p.Attach(ctx, "v", "i-1")
	check("Attach", err)
	if dev != "/dev/xvdb" {
		t.Errorf("Attach = %q, want /dev/xvdb", dev)
	}
	check("Detach", p.Detach(ctx, "v", "i-1"))
	att, err := p.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{"i-1": {"v"}})
	check("VolumesAreAttached", err)
	if !att["i-1"]["v"] {
		t.Errorf("VolumesAreAttached lost the answer: %v", att)
	}
	vols, err := p.InstanceVolumes(ctx, []cloud.InstanceID{"i-1"})
	check("InstanceVolumes", err)
	if vols["i-1"]["v"] != "/dev/xvdb" {
		t.Errorf("InstanceVolumes lost the answer: %v", vols)
	}
}

var providerMethods = []string{"instance_id", "attach", "detach", "volumes_are_attached", "instance_volumes"}

func TestInstrumentProviderRecordsResults(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		result string
	}{
		{"ok", nil, "ok"},
		{"throttled", fmt.Errorf("ec2: slow down: %w", cloud.ErrThrottled), "throttled"},
		{"attached elsewhere", fmt.Errorf("ec2: in use: %w", cloud.ErrAttachedElsewhere), "attached-elsewhere"},
		{"unclassified", errors.New("connection reset"), "retryable"},
		{"context", context.DeadlineExceeded, "retryable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMetrics(t)
			fake := &fakeProvider{err: tt.err}
			p := InstrumentProvider(fake, m)

			callAll(t, p, tt.err)
			if fake.calls != len(providerMethods) {
				t.Errorf("fake saw %d calls, want %d", fake.calls, len(providerMethods))
			}
			if got := p.BatchSize(); got != 7 {
				t.Errorf("BatchSize = %d, want 7", got)
			}
			for _, method := range providerMethods {
				l := labels{"method": method, "result": tt.result}
				if got := counter(t, m, "tether_cloud_calls_total", l); got != 1 {
					t.Errorf("tether_cloud_calls_total%v = %v, want 1", l, got)
				}
				if n, _ := observations(t, m, "tether_cloud_call_seconds", labels{"method": method}); n != 1 {
					t.Errorf("tether_cloud_call_seconds{method=%q} count = %d, want 1", method, n)
				}
			}
		})
	}
}

func TestMountOperationRecords(t *testing.T) {
	m := newMetrics(t)
	for _, op := range []struct {
		name string
		err  error
	}{{"stage", nil}, {"publish", errors.New("fake mount failure")}, {"unpublish", nil}, {"unstage", nil}} {
		m.MountOperation(op.name, op.err, time.Millisecond)
	}
	for op, result := range map[string]string{"stage": "ok", "publish": "error", "unpublish": "ok", "unstage": "ok"} {
		l := labels{"op": op, "result": result}
		if got := counter(t, m, "tether_operations_total", l); got != 1 {
			t.Errorf("tether_operations_total%v = %v, want 1", l, got)
		}
		if n, _ := observations(t, m, "tether_operation_seconds", labels{"op": op}); n != 1 {
			t.Errorf("tether_operation_seconds{op=%q} count = %d, want 1", op, n)
		}
	}
	var none *Metrics
	none.MountOperation("stage", nil, time.Millisecond) // a nil Metrics records nothing, and does not panic
}

// resolvingProvider is fakeProvider with cloud.InstanceResolver.
type resolvingProvider struct{ *fakeProvider }

func (r resolvingProvider) InstanceIDs(context.Context, []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	r.calls++
	return map[cloud.NodeName]cloud.InstanceID{"n1": "i-1"}, r.err
}

// InstanceIDs is recorded as instance_ids where the provider has it;
// where it has not, it says so and records nothing.
func TestInstrumentProviderInstanceIDs(t *testing.T) {
	m := newMetrics(t)
	p := InstrumentProvider(resolvingProvider{&fakeProvider{}}, m).(cloud.InstanceResolver)
	if got, err := p.InstanceIDs(context.Background(), []cloud.NodeName{"n1"}); err != nil || got["n1"] != "i-1" {
		t.Fatalf("InstanceIDs = %v, %v", got, err)
	}
	if got := counter(t, m, "tether_cloud_calls_total", labels{"method": "instance_ids", "result": "ok"}); got != 1 {
		t.Fatalf("instance_ids calls recorded: %v, want 1", got)
	}
	q := InstrumentProvider(&fakeProvider{}, m).(cloud.InstanceResolver)
	if _, err := q.InstanceIDs(context.Background(), []cloud.NodeName{"n1"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("InstanceIDs over a provider without it: %v, want errors.ErrUnsupported", err)
	}
	if got := counter(t, m, "tether_cloud_calls_total", labels{"method": "instance_ids", "result": "ok"}); got != 1 {
		t.Fatalf("instance_ids calls recorded: %v, want still 1", got)
	}
}
