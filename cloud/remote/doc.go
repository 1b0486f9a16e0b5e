// Package remote serves a cloud.Provider over gRPC (Serve, and ServeSim
// with the sim cloud's admin side) and is a cloud.Provider that calls one
// (Dial, Client), so that several processes share one cloud.
//
// Over the wire the Provider contract holds: a call whose ctx is done is
// not sent, the deadline travels shortened by DeadlineMargin, an error
// comes back wrapping its kind's sentinel (read from the CloudError
// detail, never the code), and an outcome that cannot be known wraps
// ErrUnknownOutcome and context.DeadlineExceeded. It never retries, caches
// nothing but the batch size, and imports no actor or node code.
//
// See docs/distributed.md#the-wire-inside-cloudremote for the admin side,
// Watch and the error table.
package remote
