// Package metrics owns tether's Prometheus metrics: the collectors, one
// registry holding them with the Go and process collectors and, through
// an OpenTelemetry MeterProvider, Proto.Actor's own metrics; decorators
// that measure every cloud.Provider and mount.Mounter call; and the
// /metrics, /healthz and /readyz handlers.
//
// It never decides anything and passes every call and error through
// unchanged; every method is a no-op on a nil *Metrics. It keeps no
// global state (New builds afresh; only SetGlobal installs the provider
// as OpenTelemetry's), and Serve refuses an address that is not loopback:
// beyond it takes ServeTLS or, in plain text, ServeExposed.
//
// See docs/operating.md#metrics-and-health.
package metrics
