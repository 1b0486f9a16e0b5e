package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Bucket layouts, in seconds.
var (
	// callBuckets cover a cloud or mount call from a few milliseconds (a
	// cached answer, a local symlink) to five minutes (a slow attach that
	// the cloud finishes long after its API answered).
	callBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	// backoffBuckets follow the backoff curve (500 ms, doubling, capped at
	// about two minutes plus jitter): one bucket per doubling.
	backoffBuckets = prometheus.ExponentialBuckets(0.25, 2, 11) // 0.25 s .. 256 s
)

// noopProvider is what a nil *Metrics hands out: meters that record nothing.
var noopProvider metric.MeterProvider = noop.NewMeterProvider()

// Metrics holds tether's collectors and the OpenTelemetry provider that
// exports into the same registry. A nil *Metrics is valid and records
// nothing.
type Metrics struct {
	registry *prometheus.Registry
	provider *sdkmetric.MeterProvider

	cloudCalls   *prometheus.CounterVec
	cloudSeconds *prometheus.HistogramVec
	operations   *prometheus.CounterVec
	opSeconds    *prometheus.HistogramVec
	events       *prometheus.CounterVec
	backoffWait  *prometheus.HistogramVec
	restarts     *prometheus.CounterVec
	attachments  *prometheus.GaugeVec
	syncSeconds  prometheus.Histogram
	syncCalls    prometheus.Counter
	syncErrors   prometheus.Counter

	shutdownOnce sync.Once
	shutdownErr  error
}

// New registers tether's collectors, the Go and the process collectors on a
// fresh registry, and builds a MeterProvider whose Prometheus exporter
// writes to that registry. It does not touch OpenTelemetry's global
// provider (see SetGlobal), so tests may create as many as they like.
func New() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		registry: reg,
		cloudCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_cloud_calls_total",
			Help: "Cloud provider calls by method and result (ok or the error's class).",
		}, []string{"method", "result"}),
		cloudSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_cloud_call_seconds",
			Help:    "Duration of cloud provider calls by method.",
			Buckets: callBuckets,
		}, []string{"method"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_operations_total",
			Help: "Volume operations (attach, detach, stage, unstage, publish, unpublish) by result.",
		}, []string{"op", "result"}),
		opSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_operation_seconds",
			Help:    "Duration of volume operations.",
			Buckets: callBuckets,
		}, []string{"op"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_events_total",
			Help: "Events emitted, by type (SuccessfulAttachVolume, FailedAttachVolume, Multi-Attach, ...).",
		}, []string{"type"}),
		backoffWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_backoff_wait_seconds",
			Help:    "Backoff delays scheduled before retrying an operation.",
			Buckets: backoffBuckets,
		}, []string{"op"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_actor_restarts_total",
			Help: "Actor restarts by supervisors, by actor kind (volume, node, sync, agent, other).",
		}, []string{"kind"}),
		attachments: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tether_attachments",
			Help: "Attachments by state (Attaching, Attached, Uncertain, Detaching).",
		}, []string{"state"}),
		syncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tether_sync_pass_seconds",
			Help:    "Duration of a sync pass (verifying attachments against the cloud).",
			Buckets: callBuckets,
		}),
		syncCalls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_sync_calls_total",
			Help: "Cloud calls made by sync passes.",
		}),
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_sync_errors_total",
			Help: "Failed cloud calls of sync passes.",
		}),
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.cloudCalls, m.cloudSeconds, m.operations, m.opSeconds, m.events,
		m.backoffWait, m.restarts, m.attachments, m.syncSeconds, m.syncCalls, m.syncErrors,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register collector: %w", err)
		}
	}

	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("metrics: opentelemetry prometheus exporter: %w", err)
	}
	m.provider = sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exporter),
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "tether"))),
	)
	return m, nil
}

// Registry is the registry /metrics serves; nil on a nil *Metrics.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.registry
}

// MeterProvider is the OpenTelemetry provider exporting into Registry. Pass
// it to actor.WithMetricProviders to enable Proto.Actor's metrics; they flow
// only once SetGlobal has run, because Proto.Actor takes its meters from
// otel.Meter (the global provider), using the configured provider only as
// the switch that enables them. On a nil *Metrics it is a no-op provider.
func (m *Metrics) MeterProvider() metric.MeterProvider {
	if m == nil {
		return noopProvider
	}
	return m.provider
}

// SetGlobal installs MeterProvider as OpenTelemetry's global provider. The
// process calls it once, before starting the actor system; New never does.
func (m *Metrics) SetGlobal() {
	if m == nil {
		return
	}
	otel.SetMeterProvider(m.provider)
}

// Shutdown stops the MeterProvider: OpenTelemetry measurements are no longer
// exported (tether's own collectors keep working). Later calls return the
// first call's result.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	m.shutdownOnce.Do(func() { m.shutdownErr = m.provider.Shutdown(ctx) })
	return m.shutdownErr
}

// CloudCall records one cloud provider call: result is "ok" or the error's
// class (cloud.Classify(err).String()).
func (m *Metrics) CloudCall(method, result string, d time.Duration) {
	if m == nil {
		return
	}
	m.cloudCalls.WithLabelValues(method, result).Inc()
	m.cloudSeconds.WithLabelValues(method).Observe(d.Seconds())
}

// Operation records one volume operation: op is attach, detach, stage,
// unstage, publish or unpublish.
func (m *Metrics) Operation(op, result string, d time.Duration) {
	if m == nil {
		return
	}
	m.operations.WithLabelValues(op, result).Inc()
	m.opSeconds.WithLabelValues(op).Observe(d.Seconds())
}

// Event counts one emitted event of the given type.
func (m *Metrics) Event(typ string) {
	if m == nil {
		return
	}
	m.events.WithLabelValues(typ).Inc()
}

// BackoffWait records a delay scheduled before retrying op.
func (m *Metrics) BackoffWait(op string, d time.Duration) {
	if m == nil {
		return
	}
	m.backoffWait.WithLabelValues(op).Observe(d.Seconds())
}

// restartKinds bounds the kind label: anything else counts as "other".
var restartKinds = map[string]bool{"volume": true, "node": true, "sync": true, "agent": true, "other": true}

// ActorRestart counts one actor restart. kind is volume, node, sync, agent
// or other; any other value is counted as "other", keeping the label's
// values bounded.
func (m *Metrics) ActorRestart(kind string) {
	if m == nil {
		return
	}
	if !restartKinds[kind] {
		kind = "other"
	}
	m.restarts.WithLabelValues(kind).Inc()
}

// VolumeStates adjusts the tether_attachments gauge by state: +1 for an
// attachment entering a state, -1 for one leaving it.
func (m *Metrics) VolumeStates(delta map[string]int) {
	if m == nil {
		return
	}
	for state, d := range delta {
		if d != 0 {
			m.attachments.WithLabelValues(state).Add(float64(d))
		}
	}
}

// SyncPass records one sync pass: its duration, the cloud calls it made and
// how many of them failed. Negative counts are ignored (counters only grow).
func (m *Metrics) SyncPass(d time.Duration, calls, errors int) {
	if m == nil {
		return
	}
	m.syncSeconds.Observe(d.Seconds())
	if calls > 0 {
		m.syncCalls.Add(float64(calls))
	}
	if errors > 0 {
		m.syncErrors.Add(float64(errors))
	}
}

// StoreRequests exports counts (called at every scrape) as
// tether_store_requests_total{op}: the requests the store sent to its
// backend (etcd RPCs, bbolt transactions) by kind. Call it once.
func (m *Metrics) StoreRequests(counts func() map[string]uint64) error {
	if m == nil {
		return nil
	}
	return m.registry.Register(storeRequests{counts: counts})
}

var storeRequestsDesc = prometheus.NewDesc("tether_store_requests_total",
	"Requests the store sent to its backend, by kind (etcd: range, txn_read, txn_write, put, delete, watch; bbolt: view, update).",
	[]string{"op"}, nil)

// storeRequests is a collector of counters kept by the store itself.
type storeRequests struct{ counts func() map[string]uint64 }

func (c storeRequests) Describe(ch chan<- *prometheus.Desc) { ch <- storeRequestsDesc }

func (c storeRequests) Collect(ch chan<- prometheus.Metric) {
	for op, n := range c.counts() {
		ch <- prometheus.MustNewConstMetric(storeRequestsDesc, prometheus.CounterValue, float64(n), op)
	}
}
