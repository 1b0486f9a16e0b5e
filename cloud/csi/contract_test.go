package csi

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// The Provider contract: a call whose ctx is already done is not sent.
func TestDoneContextSendsNothing(t *testing.T) {
	r := newRig(t, listByPage())
	r.d.AddVolume("a")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Attach", func() error { _, err := r.p.Attach(ctx, "a", id1); return err }},
		{"Detach", func() error { return r.p.Detach(ctx, "a", id1) }},
		{"VolumesAreAttached", func() error {
			_, err := r.p.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{id1: {"a"}})
			return err
		}},
		{"InstanceVolumes", func() error { _, err := r.p.InstanceVolumes(ctx, []cloud.InstanceID{id1}); return err }},
	} {
		if err := c.call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s = %v, want context.Canceled", c.name, err)
		}
	}
	for _, m := range []string{"ControllerPublishVolume", "ControllerUnpublishVolume", "ListVolumes"} {
		if n := r.c.get(m); n != 0 {
			t.Errorf("%d %s calls reached the driver", n, m)
		}
	}
}

// The Provider contract: cancelling ctx only stops the wait; a sent call
// is carried out.
func TestCancelOnlyStopsTheWait(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var driverCtxErr error
	cfg := listByPage()
	cfg.Before = func(ctx context.Context, m string) error {
		if m != "ControllerPublishVolume" {
			return nil
		}
		close(entered)
		select {
		case <-release:
		case <-time.After(10 * time.Second): // the test failed; let the server stop
		}
		mu.Lock()
		driverCtxErr = ctx.Err()
		mu.Unlock()
		return nil
	}
	r := newRig(t, cfg)
	r.d.AddVolume("a")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := r.p.Attach(ctx, "a", id1); done <- err }()
	<-entered
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Attach = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Attach still waits after its ctx was cancelled")
	}
	close(release)
	testkit.Eventually(t, 10*time.Second, func() bool {
		return slices.Equal(r.d.PublishedTo("a"), []string{"node-1"})
	}, "the cancelled attach to land")
	mu.Lock()
	defer mu.Unlock()
	if driverCtxErr != nil {
		t.Errorf("the driver's context ended with the caller's: %v", driverCtxErr)
	}
}

// The Provider contract: a sent call carries the caller's deadline, a
// margin earlier, so a driver that honours it never acts after it.
func TestDeadlineIsCarried(t *testing.T) {
	var mu sync.Mutex
	var seen time.Time
	var had bool
	cfg := listByPage()
	cfg.Before = func(ctx context.Context, m string) error {
		if m == "ControllerPublishVolume" {
			mu.Lock()
			seen, had = ctx.Deadline()
			mu.Unlock()
		}
		return nil
	}
	r := newRig(t, cfg)
	r.d.AddVolume("a")
	deadline := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	if _, err := r.p.Attach(ctx, "a", id1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// gRPC sends a timeout, not a time: allow for the transit.
	if !had || seen.After(deadline.Add(-DeadlineMargin).Add(DeadlineMargin/2)) || seen.Before(deadline.Add(-time.Second)) {
		t.Errorf("the driver's deadline is %v (set: %v); the caller's is %v", seen, had, deadline)
	}
}

// What the driver answers reaches the caller classified, with its words.
func TestDriverAnswersClassified(t *testing.T) {
	for _, tc := range []struct {
		code    codes.Code
		want    cloud.Kind
		mayLand bool
	}{
		{codes.Aborted, cloud.KindRetryable, false},
		{codes.Unavailable, cloud.KindRetryable, true},
		{codes.Internal, cloud.KindRetryable, true},
		{codes.InvalidArgument, cloud.KindTerminal, false},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			cfg := listByPage()
			cfg.Before = func(_ context.Context, m string) error {
				if m == "ControllerPublishVolume" || m == "ListVolumes" {
					return status.Error(tc.code, "said the driver")
				}
				return nil
			}
			r := newRig(t, cfg)
			_, err := r.p.Attach(t.Context(), "a", id1)
			if cloud.Classify(err) != tc.want || isContextErr(err) != tc.mayLand {
				t.Errorf("Attach = %v (%v, may land %v), want %v, may land %v", err, cloud.Classify(err), isContextErr(err), tc.want, tc.mayLand)
			}
			_, err = r.p.InstanceVolumes(t.Context(), []cloud.InstanceID{id1})
			if cloud.Classify(err) != tc.want {
				t.Errorf("InstanceVolumes = %v, want %v", err, tc.want)
			}
		})
	}
}
