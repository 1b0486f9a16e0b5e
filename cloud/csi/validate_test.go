package csi

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
)

// Validate confirms a volume the driver has, reports NOT_FOUND for one it
// lacks, and classifies the driver's failures; it sends the capability of
// the mode asked.
func TestValidate(t *testing.T) {
	var fail atomic.Bool
	cfg := listByPage()
	cfg.Before = func(_ context.Context, m string) error {
		if m == "ValidateVolumeCapabilities" && fail.Load() {
			return status.Error(codes.Unavailable, "restarting")
		}
		return nil
	}
	r := newRig(t, cfg)
	ctx := t.Context()
	r.d.AddVolume("v1")
	for _, a := range []Access{rwo, rwx, rox} {
		if err := r.p.Validate(ctx, "v1", a); err != nil {
			t.Errorf("Validate(v1, %s) = %v, want nil", a, err)
		}
	}
	if err := r.p.Validate(ctx, "nope", rwo); cloud.Classify(err) != cloud.KindNotFound {
		t.Errorf("Validate(nope) = %v, want not found", err)
	}
	fail.Store(true)
	if err := r.p.Validate(ctx, "v1", rwo); cloud.Classify(err) != cloud.KindRetryable {
		t.Errorf("Validate with the driver unavailable = %v, want retryable", err)
	}
	if got := r.d.Count("ValidateVolumeCapabilities", ""); got != 5 {
		t.Errorf("the driver got %d ValidateVolumeCapabilities calls, want 5", got)
	}
	if len(r.d.PublishedTo("v1")) != 0 {
		t.Error("Validate published the volume")
	}
}
