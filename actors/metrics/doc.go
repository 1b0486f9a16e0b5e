// Package metrics owns tether's Prometheus metrics and the small HTTP
// endpoint that exposes them: the collectors (cloud calls, volume and mount
// operations, events, backoff waits, actor restarts, attachment states, sync
// passes), one prometheus.Registry holding them together with the Go and
// process collectors, an OpenTelemetry MeterProvider whose Prometheus
// exporter writes to the same registry (so Proto.Actor's own metrics appear
// next to tether's), decorators that measure every cloud.Provider and
// mount.Mounter call, and the /metrics, /healthz and /readyz handlers.
//
// It never decides anything: it counts what callers report and passes every
// call and error through unchanged. Every method is safe on a nil *Metrics
// and then does nothing, so wiring metrics is optional. It keeps no global
// state: New builds a fresh registry and provider each time, and only
// SetGlobal (called once by the process) installs the provider as
// OpenTelemetry's global one. Its server never listens on anything but the
// address it is given, and Serve refuses an address that is not loopback
// (127.0.0.0/8, ::1, localhost); exposing metrics elsewhere takes the
// explicit ServeTLS or, in plain text, ServeExposed.
package metrics
