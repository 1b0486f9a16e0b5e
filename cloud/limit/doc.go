// Package limit wraps a cloud.Provider with what a good client of a cloud
// API does on its own side, as the Kubernetes client does with its QPS and
// burst: a token-bucket rate limit at the limiter's clock and a bound on
// calls in flight, served in the order they ask, so no volume starves
// another. A call that cannot get its turn before its context's deadline
// is not sent and fails at once wrapping cloud.ErrThrottled, which by the
// Provider contract means "no effect".
//
// See docs/operating.md#flags-of-tether-up (--cloud-qps, --cloud-burst,
// --cloud-max-inflight).
package limit
