package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/names"
	"github.com/tether/tether/cloud/files/realdir"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// ErrUnknownOutcome marks a call that may or may not have been carried
// out: it was (or may have been) sent and no answer from the provider came
// back. Errors wrapping it also wrap context.DeadlineExceeded (see
// docs/distributed.md#errors).
var ErrUnknownOutcome = errors.New("remote: outcome unknown")

// sentinels are the errors, besides the kinds' sentinels, that keep their
// identity over the wire, by name (messages.CloudError.sentinels): those
// the sim's admin side wraps, and the end of a watch that fell behind.
// Names are never reused; a client ignores names it does not know.
var sentinels = []struct {
	name string
	err  error
}{
	{"sim.volume_in_use", sim.ErrVolumeInUse},
	{"sim.unsafe_content", sim.ErrUnsafeContent},
	{"realdir.unsafe", realdir.ErrUnsafe},
	{"names.invalid_name", names.ErrInvalidName},
	{"fs.not_exist", fs.ErrNotExist},
	{"remote.watch_overflow", ErrWatchOverflow},
}

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
	detail := &messages.CloudError{Kind: int32(k)}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			detail.Sentinels = append(detail.Sentinels, s.name)
		}
	}
	st, derr := status.New(codeOf(k), err.Error()).WithDetails(detail)
	if derr != nil {
		// Cannot happen (the detail always marshals); without it the client
		// would report an unknown outcome, which is safe.
		return status.Error(codeOf(k), err.Error())
	}
	return st.Err()
}

// providerError is an error the provider returned, rebuilt on the client:
// the provider's text, wrapping its kind's sentinel and the other
// sentinels it named.
type providerError struct {
	msg       string
	sentinels []error
}

func (e *providerError) Error() string   { return e.msg }
func (e *providerError) Unwrap() []error { return e.sentinels }

// errorOf rebuilds the error a CloudError detail describes, with text msg.
func errorOf(msg string, ce *messages.CloudError) *providerError {
	e := &providerError{msg: msg, sentinels: []error{cmp.Or(cloud.Kind(ce.GetKind()).Sentinel(), cloud.ErrRetryable)}}
	for _, name := range ce.GetSentinels() {
		for _, s := range sentinels {
			if s.name == name {
				e.sentinels = append(e.sentinels, s.err)
			}
		}
	}
	return e
}

// fromStatus is the client's error for the failure err of a call of
// method that was (or may have been) sent, under ctx.
func fromStatus(ctx context.Context, method string, err error) error {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if ce, ok := d.(*messages.CloudError); ok {
			return errorOf(st.Message(), ce)
		}
	}
	if st.Code() == codes.Unimplemented {
		// Refused before any handler ran (a Serve has no SimAdmin): no
		// effect, and trying again will not help.
		return fmt.Errorf("remote: %s: not served there: %s: %w", method, st.Message(), cloud.ErrTerminal)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("remote: %s: %w (%s)", method, cerr, st.Message())
	}
	// Wraps context.DeadlineExceeded, not only ErrUnknownOutcome: callers
	// (the volume actor's landed) treat exactly the context errors as "may
	// still land", and anything else as "had no effect".
	return fmt.Errorf("remote: %s: %w: %w (%s: %s)", method, ErrUnknownOutcome, context.DeadlineExceeded, st.Code(), st.Message())
}
