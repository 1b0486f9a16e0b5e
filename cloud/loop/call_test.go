package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

// fakeClock is Config.Now, moved by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
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

// faultyDevices is the real driver with failures and hooks on demand.
type faultyDevices struct {
	devices
	failRelease atomic.Bool
	afterBind   func()
}

func (d *faultyDevices) bind(image string, readOnly bool) (string, error) {
	dev, err := d.devices.bind(image, readOnly)
	if err == nil && d.afterBind != nil {
		d.afterBind()
	}
	return dev, err
}

func (d *faultyDevices) release(dev string, mine func(binding) bool) (bool, error) {
	if d.failRelease.Load() {
		return false, errors.New("injected release failure")
	}
	return d.devices.release(dev, mine)
}

// withFaults puts a faultyDevices under f's cloud (before any concurrent
// use).
func withFaults(f *fixture) *faultyDevices {
	d := &faultyDevices{devices: f.c.dev}
	f.c.dev = d
	return d
}

// A call whose context is done is never sent.
func TestContextDoneNotSent(t *testing.T) {
	f := newFixture(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.c.Attach(ctx, "excl", f.i1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Attach: %v, want context.Canceled", err)
	}
	if got := devicesOf(t, f.image("excl")); len(got) != 0 || len(f.c.Attachments()) != 0 {
		t.Errorf("a call never sent bound %v, recorded %v", got, f.c.Attachments())
	}
}

// A call never takes effect after its deadline (on Config.Now), whether
// it has passed before the call or passes while it binds.
func TestDeadlinePassedDropped(t *testing.T) {
	for _, tc := range []struct {
		name               string
		before, duringBind time.Duration
	}{
		{"before the call", 2 * time.Hour, 0},
		{"during the bind", 0, 2 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Now()}
			f := newFixture(t, Config{Now: clock.Now})
			d := withFaults(f)
			d.afterBind = func() { clock.Advance(tc.duringBind) }
			clock.Advance(tc.before)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			if _, err := f.c.Attach(ctx, "excl", f.i1); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Attach: %v, want DeadlineExceeded", err)
			}
			if got := f.c.Attachments(); len(got) != 0 {
				t.Errorf("recorded %v", got)
			}
			waitNoDevices(t, f.image("excl"))
		})
	}
}

func TestBatchTooLarge(t *testing.T) {
	f := newFixture(t, Config{BatchSize: 1})
	ctx := context.Background()
	_, err := f.c.InstanceVolumes(ctx, []cloud.InstanceID{f.i1, f.i2})
	if cloud.Classify(err) != cloud.KindTerminal {
		t.Errorf("InstanceVolumes of 2 with a batch of 1: %v, want terminal", err)
	}
	_, err = f.c.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{f.i1: nil, f.i2: nil})
	if cloud.Classify(err) != cloud.KindTerminal {
		t.Errorf("VolumesAreAttached of 2 with a batch of 1: %v, want terminal", err)
	}
	if f.c.BatchSize() != 1 {
		t.Errorf("BatchSize = %d", f.c.BatchSize())
	}
}

// An attach whose state cannot be written fails, retryable, and leaves
// nothing: no record, no device.
func TestWriteFailureUndoesAttach(t *testing.T) {
	f := newFixture(t, Config{})
	f.c.write = func(string, []byte) error { return errors.New("injected: disk full") }
	defer func() { f.c.write = writeState }()
	_, err := f.c.Attach(context.Background(), "excl", f.i1)
	if cloud.Classify(err) != cloud.KindRetryable {
		t.Fatalf("Attach: %v, want retryable", err)
	}
	if got := f.c.Attachments(); len(got) != 0 {
		t.Errorf("recorded %v", got)
	}
	waitNoDevices(t, f.image("excl"))
}

// A device that cannot be released fails the detach without effect: the
// attachment stays, in memory and on disk.
func TestReleaseFailureKeepsAttachment(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	d := withFaults(f)
	d.failRelease.Store(true)
	err := f.c.Detach(context.Background(), "excl", f.i1)
	d.failRelease.Store(false)
	if cloud.Classify(err) != cloud.KindRetryable {
		t.Fatalf("Detach: %v, want retryable", err)
	}
	if got := f.devices(t, f.i1)["excl"]; got != dev {
		t.Errorf("after a failed detach excl is at %q, want %s", got, dev)
	}
	data, err := os.ReadFile(filepath.Join(f.dir, stateName))
	if err != nil {
		t.Fatal(err)
	}
	w, err := decodeWorld(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Volumes["excl"].Attached[f.i1].Device; got != dev {
		t.Errorf("the state file says excl is at %q, want %s", got, dev)
	}
	if sysBackingOf(t, dev) != f.image("excl") {
		t.Errorf("%s was released", dev)
	}
	f.detach(t, "excl", f.i1)
}

// Concurrent attaches, detaches and reads (run with -race) end where they
// should: nothing attached, nothing bound.
func TestConcurrentCalls(t *testing.T) {
	f := newFixture(t, Config{})
	const workers, rounds = 6, 4
	vols := make([]VolumeSpec, workers)
	for i := range vols {
		vols[i] = VolumeSpec{ID: cloud.VolumeID(fmt.Sprintf("c%d", i)), Mode: cloud.Exclusive, Size: mib}
	}
	if err := f.c.CreateVolumes(vols); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errs := make(chan error, workers*rounds*3)
	var wg sync.WaitGroup
	for i, v := range vols {
		inst := []cloud.InstanceID{f.i1, f.i2}[i%2]
		wg.Go(func() {
			for range rounds {
				if _, err := f.c.Attach(ctx, v.ID, inst); err != nil {
					errs <- err
				}
				if _, err := f.c.InstanceVolumes(ctx, []cloud.InstanceID{f.i1, f.i2}); err != nil {
					errs <- err
				}
				if err := f.c.Detach(ctx, v.ID, inst); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := f.c.Attachments(); len(got) != 0 {
		t.Errorf("Attachments = %v", got)
	}
	for _, v := range vols {
		waitNoDevices(t, f.image(v.ID))
	}
}

// waitNoDevices waits (bounded) until no loop device is bound to image.
func waitNoDevices(t *testing.T, image string) {
	t.Helper()
	var got []string
	if !testkit.Until(5*time.Second, func() bool { got = devicesOf(t, image); return len(got) == 0 }) {
		t.Fatalf("%v still bound to %s after 5 s", got, image)
	}
}
