package csi

import (
	"context"
	"fmt"
	"time"
)

// DeadlineMargin is how much earlier than its caller's deadline a sent
// call's deadline is: gRPC measures the propagated timeout from the moment
// the driver reads it, so the driver's deadline is later than ours by the
// transit time (on a unix socket, well under this).
const DeadlineMargin = 20 * time.Millisecond

// call runs one CSI call op under ctx, with the Provider contract:
//
//   - nothing is sent if ctx is done (ctx.Err() comes back);
//   - the call carries ctx's deadline, shortened by DeadlineMargin, so a
//     driver that honours its context never acts after ctx's deadline;
//   - a mutating call (detach true) is sent with a context that ctx's
//     cancellation does not reach: cancelling ctx only stops the wait
//     (the call goes on, on its own goroutine, until the driver answers,
//     its deadline passes or the connection closes);
//   - a failure is mapped by MapError, unless ctx is done by then: the
//     error wraps ctx.Err() (the outcome is unknown).
func call[R any](ctx context.Context, op string, detach bool, send func(context.Context) (R, error)) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("csi: %s: not sent: %w", op, err)
	}
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if detach {
		sctx = context.WithoutCancel(ctx)
	}
	if d, ok := ctx.Deadline(); ok {
		sctx, cancel = context.WithDeadline(sctx, d.Add(-DeadlineMargin))
	}
	if !detach {
		defer cancel()
		r, err := send(sctx)
		return r, failed(ctx, op, err)
	}
	type result struct {
		r   R
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer cancel()
		r, err := send(sctx)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.r, failed(ctx, op, res.err)
	case <-ctx.Done():
		return zero, fmt.Errorf("csi: %s: stopped waiting, the call goes on: %w", op, ctx.Err())
	}
}

// failed is the error of a call of op under ctx that ended with err.
func failed(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("csi: %s: %w (%v)", op, cerr, MapError(op, err))
	}
	return MapError(op, err)
}
