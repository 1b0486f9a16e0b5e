package sim

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// fakeClock is a manually advanced clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// fixture is a cloud with instances for nodes n1..n3 and volumes
// "excl" (exclusive) and "multi" (multi-node).
type fixture struct {
	c     *Cloud
	clock *fakeClock
	i1    cloud.InstanceID
	i2    cloud.InstanceID
	i3    cloud.InstanceID
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	clock := newFakeClock()
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	c := New(cfg)
	c.CreateVolume("excl", cloud.Exclusive)
	c.CreateVolume("multi", cloud.MultiNode)
	return &fixture{c: c, clock: clock, i1: c.AddInstance("n1"), i2: c.AddInstance("n2"), i3: c.AddInstance("n3")}
}

func (f *fixture) attach(t *testing.T, vol cloud.VolumeID, inst cloud.InstanceID) string {
	t.Helper()
	dev, err := f.c.Attach(context.Background(), vol, inst)
	if err != nil {
		t.Fatalf("attach %s to %s: %v", vol, inst, err)
	}
	return dev
}

// checkErr fails unless err has the wanted kind and (if non-empty) its
// message contains every one of parts.
func checkErr(t *testing.T, err error, want cloud.Kind, parts ...string) {
	t.Helper()
	if got := cloud.Classify(err); got != want {
		t.Fatalf("error %v: kind %s, want %s", err, got, want)
	}
	for _, p := range parts {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Fatalf("error %v does not mention %q", err, p)
		}
	}
}

func attachments(pairs ...string) map[cloud.VolumeID][]cloud.InstanceID {
	out := make(map[cloud.VolumeID][]cloud.InstanceID)
	for i := 0; i+1 < len(pairs); i += 2 {
		vol := cloud.VolumeID(pairs[i])
		out[vol] = append(out[vol], cloud.InstanceID(pairs[i+1]))
	}
	return out
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
