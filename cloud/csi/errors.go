package csi

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
)

// ErrUnknownOutcome marks a call that may or may not have been carried
// out: the driver (or gRPC on its behalf) answered with a code that does
// not say. Errors wrapping it also wrap cloud.ErrRetryable and
// context.DeadlineExceeded (see docs/storage.md#errors).
var ErrUnknownOutcome = errors.New("csi: outcome unknown")

// class is what a status code of a CSI driver means to tether: the
// sentinel its errors wrap, and whether the call may have taken effect
// all the same.
type class struct {
	kind    error
	unknown bool
}

// classOf maps a code to its class. The CSI spec gives the controller
// codes their meaning (FAILED_PRECONDITION: the volume is published to
// another node in a single-node mode; RESOURCE_EXHAUSTED: the node's
// max_volumes_per_node is reached; ABORTED: an operation on the volume is
// already pending). gRPC itself produces CANCELED, DEADLINE_EXCEEDED,
// UNAVAILABLE, UNKNOWN and INTERNAL for calls it could not see through,
// and drivers answer INTERNAL for a cloud call that failed half-way: the
// call may have been carried out, so these are retryable AND of unknown
// outcome. Every other code is a refusal that repeating will not change.
func classOf(c codes.Code) class {
	switch c {
	case codes.OK:
		return class{}
	case codes.NotFound:
		return class{kind: cloud.ErrNotFound}
	case codes.FailedPrecondition:
		return class{kind: cloud.ErrAttachedElsewhere}
	case codes.ResourceExhausted:
		return class{kind: cloud.ErrLimitReached}
	case codes.Aborted:
		return class{kind: cloud.ErrRetryable}
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.Unknown, codes.Internal:
		return class{kind: cloud.ErrRetryable, unknown: true}
	}
	return class{kind: cloud.ErrTerminal}
}

// Error is a failed CSI call: the operation, the driver's code and
// message, classified (errors.Is with the cloud sentinels and
// cloud.Classify hold).
type Error struct {
	Op      string     // "ControllerPublishVolume vol-1 to node-2"
	Code    codes.Code // the driver's, or gRPC's
	Message string     // the driver's
	class   class
}

func (e *Error) Error() string {
	s := fmt.Sprintf("csi: %s: %s: %s (%v)", e.Op, e.Code, e.Message, e.class.kind)
	if e.class.unknown {
		s += ", outcome unknown"
	}
	return s
}

// Unwrap lists the sentinel of the error's class and, when the outcome is
// unknown, ErrUnknownOutcome and context.DeadlineExceeded: callers (the
// volume actor's intent journal) treat exactly the context errors as "may
// still land".
func (e *Error) Unwrap() []error {
	if e.class.unknown {
		return []error{e.class.kind, ErrUnknownOutcome, context.DeadlineExceeded}
	}
	return []error{e.class.kind}
}

// GRPCStatus lets status.Code and status.Convert see the driver's status.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// MapError classifies err, the failure of the CSI call op: nil stays nil;
// anything else becomes an *Error, whose text keeps op and the driver's
// message. An error that is no gRPC status counts as codes.Unknown. It is
// pure: the caller's context is not its concern (see call).
func MapError(op string, err error) error {
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	if st.Code() == codes.OK {
		// Not a failure by its code, yet a failure: unknown.
		return &Error{Op: op, Code: codes.Unknown, Message: st.Message(), class: classOf(codes.Unknown)}
	}
	return &Error{Op: op, Code: st.Code(), Message: st.Message(), class: classOf(st.Code())}
}
