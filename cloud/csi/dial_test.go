package csi

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

func TestDialRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  csitest.Config
		opts []Option
		want string
	}{
		{name: "node-only driver", cfg: csitest.Config{NoController: true, List: true, ListPublished: true}, want: "offers no CONTROLLER_SERVICE"},
		{name: "no attach step", cfg: csitest.Config{NoPublish: true, List: true, ListPublished: true}, want: "lacks PUBLISH_UNPUBLISH_VOLUME"},
		{name: "two nodes with one ID", cfg: listByPage(),
			opts: []Option{WithNodeIDs(map[cloud.NodeName]cloud.InstanceID{"n1": "x", "n2": "x"})}, want: "node IDs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket := csitest.New(tc.cfg).Serve(t, "")
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			p, err := Dial(ctx, socket, tc.opts...)
			if err == nil {
				_ = p.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Dial = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// A driver that is not ready yet is asked again until it is.
func TestDialWaitsUntilReady(t *testing.T) {
	var probes atomic.Int32
	cfg := listByPage()
	cfg.Before = func(_ context.Context, m string) error {
		if m == "Probe" && probes.Add(1) < 3 {
			return status.Error(codes.FailedPrecondition, "warming up")
		}
		return nil
	}
	r := newRig(t, cfg, WithProbeInterval(time.Millisecond))
	if n := probes.Load(); n != 3 {
		t.Errorf("%d probes, want 3", n)
	}
	if got := r.p.Plugin(); got.Name != "csi.tether.test" || !got.Controller {
		t.Errorf("Plugin = %+v", got)
	}
}

func TestDialGivesUpWithItsContext(t *testing.T) {
	// Nothing listens there: Dial waits for the socket until ctx ends.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := Dial(ctx, filepath.Join(t.TempDir(), "none.sock"))
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial = %v, want it to end with its context", err)
	}
}
