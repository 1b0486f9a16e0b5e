// Package limit wraps a cloud.Provider with what a good client of a cloud
// API does on its own side, as the Kubernetes client does with its QPS and
// burst: a rate limit (a token bucket of golang.org/x/time/rate: QPS
// tokens a second, up to Burst saved, read at the limiter's clock) and a bound on calls in flight. Calls are served in the order
// they ask (a reservation queue), so no volume starves another.
//
// A call that cannot get its turn before its context's deadline is not
// sent at all and fails at once with an error wrapping cloud.ErrThrottled:
// by the cloud.Provider contract such an error means "no effect", and the
// caller backs off as from the cloud's own throttling.
package limit
