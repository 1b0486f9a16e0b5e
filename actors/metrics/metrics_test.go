package metrics

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// sample finds the series of family name whose labels are exactly labels
// (label name -> value) in a fresh gather of m's registry.
func sample(t *testing.T, m *Metrics, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			if len(s.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range s.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue series
				}
			}
			return s
		}
	}
	return nil
}

func counter(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	s := sample(t, m, name, labels)
	if s == nil || s.GetCounter() == nil {
		t.Fatalf("no counter %s%v", name, labels)
	}
	return s.GetCounter().GetValue()
}

func gauge(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	s := sample(t, m, name, labels)
	if s == nil || s.GetGauge() == nil {
		t.Fatalf("no gauge %s%v", name, labels)
	}
	return s.GetGauge().GetValue()
}

// observations returns a histogram's sample count and sum (in seconds).
func observations(t *testing.T, m *Metrics, name string, labels map[string]string) (uint64, float64) {
	t.Helper()
	s := sample(t, m, name, labels)
	if s == nil || s.GetHistogram() == nil {
		t.Fatalf("no histogram %s%v", name, labels)
	}
	return s.GetHistogram().GetSampleCount(), s.GetHistogram().GetSampleSum()
}

func newMetrics(t *testing.T) *Metrics {
	t.Helper()
	m, err := New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return m
}

type labels = map[string]string

func TestRecordersLabelSeries(t *testing.T) {
	m := newMetrics(t)

	m.CloudCall("attach", "ok", 200*time.Millisecond)
	m.CloudCall("attach", "ok", 300*time.Millisecond)
	m.CloudCall("attach", "throttled", time.Second)
	m.Operation("stage", "ok", 10*time.Millisecond)
	m.Operation("detach", "error", 2*time.Second)
	m.Event("Multi-Attach")
	m.Event("Multi-Attach")
	m.Event("SuccessfulAttachVolume")
	m.BackoffWait("attach", 500*time.Millisecond)
	m.BackoffWait("attach", time.Second)
	m.ActorRestart("volume")
	m.VolumeStates(map[string]int{"Attaching": 2})
	m.VolumeStates(map[string]int{"Attaching": -1, "Attached": 1})
	m.SyncPass(1500*time.Millisecond, 4, 1)
	m.SyncPass(500*time.Millisecond, 2, 0)

	counters := []struct {
		name   string
		labels labels
		want   float64
	}{
		{"tether_cloud_calls_total", labels{"method": "attach", "result": "ok"}, 2},
		{"tether_cloud_calls_total", labels{"method": "attach", "result": "throttled"}, 1},
		{"tether_operations_total", labels{"op": "stage", "result": "ok"}, 1},
		{"tether_operations_total", labels{"op": "detach", "result": "error"}, 1},
		{"tether_events_total", labels{"type": "Multi-Attach"}, 2},
		{"tether_events_total", labels{"type": "SuccessfulAttachVolume"}, 1},
		{"tether_actor_restarts_total", labels{"kind": "volume"}, 1},
		{"tether_sync_calls_total", labels{}, 6},
		{"tether_sync_errors_total", labels{}, 1},
	}
	for _, c := range counters {
		if got := counter(t, m, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	histograms := []struct {
		name      string
		labels    labels
		wantCount uint64
		wantSum   float64
	}{
		{"tether_cloud_call_seconds", labels{"method": "attach"}, 3, 1.5},
		{"tether_operation_seconds", labels{"op": "stage"}, 1, 0.01},
		{"tether_operation_seconds", labels{"op": "detach"}, 1, 2},
		{"tether_backoff_wait_seconds", labels{"op": "attach"}, 2, 1.5},
		{"tether_sync_pass_seconds", labels{}, 2, 2},
	}
	for _, h := range histograms {
		count, sum := observations(t, m, h.name, h.labels)
		if count != h.wantCount || sum != h.wantSum {
			t.Errorf("%s%v: count %d sum %v, want count %d sum %v", h.name, h.labels, count, sum, h.wantCount, h.wantSum)
		}
	}

	for state, want := range map[string]float64{"Attaching": 1, "Attached": 1} {
		if got := gauge(t, m, "tether_attachments", labels{"state": state}); got != want {
			t.Errorf("tether_attachments{state=%q} = %v, want %v", state, got, want)
		}
	}
}

func TestActorRestartKindIsBounded(t *testing.T) {
	m := newMetrics(t)
	for _, kind := range []string{"volume", "node", "sync", "agent", "other", "mystery", ""} {
		m.ActorRestart(kind)
	}
	want := map[string]float64{"volume": 1, "node": 1, "sync": 1, "agent": 1, "other": 3}
	for kind, n := range want {
		if got := counter(t, m, "tether_actor_restarts_total", labels{"kind": kind}); got != n {
			t.Errorf("restarts{kind=%q} = %v, want %v", kind, got, n)
		}
	}
	if s := sample(t, m, "tether_actor_restarts_total", labels{"kind": "mystery"}); s != nil {
		t.Errorf("unknown kind got its own series")
	}
}

func TestSyncPassIgnoresNegativeCounts(t *testing.T) {
	m := newMetrics(t)
	m.SyncPass(time.Second, -3, -1) // must not panic (counters cannot go down)
	if got := counter(t, m, "tether_sync_calls_total", labels{}); got != 0 {
		t.Errorf("sync calls = %v, want 0", got)
	}
}

func TestNilMetricsDoesNothing(t *testing.T) {
	var m *Metrics
	m.CloudCall("attach", "ok", time.Second)
	m.Operation("stage", "ok", time.Second)
	m.Event("Multi-Attach")
	m.BackoffWait("attach", time.Second)
	m.ActorRestart("volume")
	m.VolumeStates(map[string]int{"Attached": 1})
	m.SyncPass(time.Second, 1, 1)
	m.SetGlobal()
	if err := m.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown on nil: %v", err)
	}
	if m.Registry() != nil {
		t.Errorf("Registry on nil is not nil")
	}
	mp := m.MeterProvider()
	if mp == nil {
		t.Fatal("MeterProvider on nil is nil")
	}
	c, err := mp.Meter("test").Int64Counter("nothing")
	if err != nil {
		t.Fatalf("noop counter: %v", err)
	}
	c.Add(context.Background(), 1)

	var p fakeProvider
	if got := InstrumentProvider(&p, nil); got != &p {
		t.Errorf("InstrumentProvider with nil metrics wrapped the provider")
	}
}

func TestShutdownTwice(t *testing.T) {
	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := m.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown #%d: %v", i+1, err)
		}
	}
}

func TestNewTwiceIsIndependent(t *testing.T) {
	a, b := newMetrics(t), newMetrics(t)
	a.Event("X")
	if s := sample(t, b, "tether_events_total", labels{"type": "X"}); s != nil {
		t.Errorf("an event recorded on one Metrics shows on another")
	}
}
