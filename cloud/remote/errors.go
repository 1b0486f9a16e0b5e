package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// ErrUnknownOutcome marks a call that may or may not have been carried
// out: it was (or may have been) sent and no answer from the provider came
// back. Errors wrapping it also wrap context.DeadlineExceeded (see the
// package doc).
var ErrUnknownOutcome = errors.New("remote: outcome unknown")

// codeOf is the status code of a provider error of kind k.
func codeOf(k cloud.Kind) codes.Code {
	switch k {
	case cloud.KindNotFound:
		return codes.NotFound
	case cloud.KindAttachedElsewhere:
		return codes.FailedPrecondition
	case cloud.KindLimitReached, cloud.KindThrottled:
		return codes.ResourceExhausted
	case cloud.KindTerminal:
		return codes.InvalidArgument
	}
	return codes.Unavailable
}

// toStatus is the status error the server sends for the provider's err.
// A context error carries no detail: its outcome is unknown.
func toStatus(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	k := cloud.Classify(err)
	st, derr := status.New(codeOf(k), err.Error()).WithDetails(&messages.CloudError{Kind: int32(k)})
	if derr != nil {
		// Cannot happen (the detail always marshals); without it the client
		// would report an unknown outcome, which is safe.
		return status.Error(codeOf(k), err.Error())
	}
	return st.Err()
}

// providerError is an error the provider returned, rebuilt on the client:
// the provider's text, wrapping its kind's sentinel.
type providerError struct {
	msg      string
	sentinel error
}

func (e *providerError) Error() string { return e.msg }
func (e *providerError) Unwrap() error { return e.sentinel }

// fromStatus is the client's error for the failure err of a call of
// method that was (or may have been) sent, under ctx.
func fromStatus(ctx context.Context, method string, err error) error {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if ce, ok := d.(*messages.CloudError); ok {
			return &providerError{msg: st.Message(), sentinel: cmp.Or(cloud.Kind(ce.Kind).Sentinel(), cloud.ErrRetryable)}
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("remote: %s: %w (%s)", method, cerr, st.Message())
	}
	// Wraps context.DeadlineExceeded, not only ErrUnknownOutcome: callers
	// (the volume actor's landed) treat exactly the context errors as "may
	// still land", and anything else as "had no effect".
	return fmt.Errorf("remote: %s: %w: %w (%s: %s)", method, ErrUnknownOutcome, context.DeadlineExceeded, st.Code(), st.Message())
}
