package csi

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
)

func TestMapError(t *testing.T) {
	for _, tc := range []struct {
		code    codes.Code
		want    cloud.Kind
		unknown bool // may have taken effect
	}{
		{codes.FailedPrecondition, cloud.KindAttachedElsewhere, false},
		{codes.ResourceExhausted, cloud.KindLimitReached, false},
		{codes.NotFound, cloud.KindNotFound, false},
		{codes.Aborted, cloud.KindRetryable, false},
		{codes.Unavailable, cloud.KindRetryable, true},
		{codes.DeadlineExceeded, cloud.KindRetryable, true},
		{codes.Canceled, cloud.KindRetryable, true},
		{codes.Unknown, cloud.KindRetryable, true},
		{codes.Internal, cloud.KindRetryable, true},
		{codes.InvalidArgument, cloud.KindTerminal, false},
		{codes.AlreadyExists, cloud.KindTerminal, false},
		{codes.Unimplemented, cloud.KindTerminal, false},
		{codes.PermissionDenied, cloud.KindTerminal, false},
		{codes.Unauthenticated, cloud.KindTerminal, false},
		{codes.OutOfRange, cloud.KindTerminal, false},
		{codes.DataLoss, cloud.KindTerminal, false},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			err := MapError("ControllerPublishVolume v1 to n1", status.Error(tc.code, "the driver's words"))
			if got := cloud.Classify(err); got != tc.want {
				t.Errorf("Classify = %v, want %v", got, tc.want)
			}
			if got := errors.Is(err, ErrUnknownOutcome); got != tc.unknown {
				t.Errorf("errors.Is(ErrUnknownOutcome) = %v, want %v", got, tc.unknown)
			}
			// The volume actor keeps an intent until its deadline exactly
			// after context errors.
			if got := errors.Is(err, context.DeadlineExceeded); got != tc.unknown {
				t.Errorf("errors.Is(context.DeadlineExceeded) = %v, want %v", got, tc.unknown)
			}
			for _, part := range []string{"ControllerPublishVolume v1 to n1", tc.code.String(), "the driver's words"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("%q lacks %q", err, part)
				}
			}
			if got := status.Code(err); got != tc.code {
				t.Errorf("status.Code = %v, want %v", got, tc.code)
			}
		})
	}
}

func TestMapErrorOddInputs(t *testing.T) {
	if err := MapError("op", nil); err != nil {
		t.Errorf("MapError(nil) = %v", err)
	}
	// Not a status at all (a transport library's own error): unknown.
	err := MapError("op", errors.New("connection reset"))
	if cloud.Classify(err) != cloud.KindRetryable || !errors.Is(err, ErrUnknownOutcome) || !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("MapError(plain) = %v (%v)", err, cloud.Classify(err))
	}
}
