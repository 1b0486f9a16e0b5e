// Package remote serves a cloud.Provider over gRPC (Serve) and is a
// cloud.Provider that calls one (Dial), so that several processes share
// one cloud (in distributed mode, one sim cloud). It owns the wire
// mapping of calls and errors; it never retries, caches nothing but the
// batch size, and imports no actor or node code.
//
// # The sim cloud's admin side
//
// ServeSim serves a *sim.Cloud with its admin side as well
// (messages.SimAdmin), and a Client then stands in for the *sim.Cloud in
// another process: the same methods with the same signatures (those
// cloud.Provisioner and agent.SimDevices need), each bounded by
// Client.AdminTimeout since they take no context, plus Attachments and
// Watch, the ground truth for checkers. Errors cross as the provider's do
// (below), and the other sentinels the sim's admin side wraps
// (sim.ErrVolumeInUse, sim.ErrUnsafeContent, names.ErrInvalidName,
// realdir.ErrUnsafe, fs.ErrNotExist) keep their identity too. The methods
// that return no error (InstanceOf, Running, Uncommitted, Volume,
// ContentDir) read a failed call as "absent", false or "".
//
// Watch sends a snapshot of the attachments, then every real change
// (sim.ObserveSyncFrom) in order, numbered. The server queues up to
// DefaultWatchQueue changes per watch without ever blocking the cloud; a
// watcher that falls further behind has its watch ended with
// ErrWatchOverflow, and watches again.
//
// # The Provider contract over the wire
//
// A call whose ctx is already done is not sent: the client returns
// ctx.Err(). A sent call carries its deadline, shortened by DeadlineMargin
// (gRPC measures the propagated timeout from the moment the server reads
// it, so the server's deadline is later than the client's by the transit
// time; the margin keeps it before the caller's deadline as long as the
// transit takes less). The server calls the provider with the request's
// context, so a provider that drops calls past their deadline (the sim
// does) drops them here too.
//
// # Errors
//
// The server sends every error that the provider returned as a status
// carrying a messages.CloudError detail with its cloud.Kind, and a code
// chosen from the kind (for other clients and for logs):
//
//	cloud.ErrNotFound          codes.NotFound
//	cloud.ErrAttachedElsewhere codes.FailedPrecondition
//	cloud.ErrLimitReached      codes.ResourceExhausted
//	cloud.ErrThrottled         codes.ResourceExhausted
//	cloud.ErrTerminal          codes.InvalidArgument
//	cloud.ErrRetryable         codes.Unavailable (also unclassified errors)
//	context errors             codes.DeadlineExceeded / codes.Canceled, no detail
//
// The client turns a status with the detail back into an error whose text
// is the provider's and which wraps the kind's sentinel (errors.Is and
// cloud.Classify hold; an unclassified error comes back wrapping
// cloud.ErrRetryable, which is how Classify saw it). The kind is read from
// the detail, never from the code: gRPC itself produces some of these
// codes (ResourceExhausted for an oversized message, Unavailable for a
// broken connection) after the request may have been carried out.
//
// Any other failure (a status without the detail: the provider's context
// error, a broken connection, a server stopped mid-call) leaves the outcome
// unknown: the request may have been carried out and its reply lost. The
// contract says only context errors may mean that ("any other error means
// it had no effect"), and callers act on it (the volume actor keeps an
// operation's intent until its deadline only after a context error), so
// the client reports it as an error wrapping both ErrUnknownOutcome and
// context.DeadlineExceeded, as a client library's own timeout would. If the
// caller's ctx is done by then, the error wraps ctx.Err() instead.
package remote
