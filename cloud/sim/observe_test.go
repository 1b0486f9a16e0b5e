package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

func TestObserve(t *testing.T) {
	f := newFixture(t, Config{})
	var a, b []Change
	f.c.Observe(func(ch Change) { a = append(a, ch) })
	f.c.Observe(func(ch Change) { b = append(b, ch) })
	ctx := context.Background()
	t0 := f.clock.Now()
	f.attach(t, "excl", f.i1)
	f.attach(t, "excl", f.i1) // idempotent: no change
	_, _ = f.c.Attach(ctx, "excl", f.i2)
	f.clock.Advance(time.Second)
	mustNil(t, f.c.Detach(ctx, "excl", f.i1))
	mustNil(t, f.c.Detach(ctx, "excl", f.i1)) // idempotent: no change
	f.attach(t, "multi", f.i2)
	mustNil(t, f.c.Terminate(f.i2))
	t1 := t0.Add(time.Second)
	want := []Change{
		{Time: t0, Volume: "excl", Instance: f.i1, Node: "n1", Mode: cloud.Exclusive, Attached: true, Reason: "attach"},
		{Time: t1, Volume: "excl", Instance: f.i1, Node: "n1", Mode: cloud.Exclusive, Reason: "detach"},
		{Time: t1, Volume: "multi", Instance: f.i2, Node: "n2", Mode: cloud.MultiNode, Attached: true, Reason: "attach"},
		{Time: t1, Volume: "multi", Instance: f.i2, Node: "n2", Mode: cloud.MultiNode, Reason: "terminate"},
	}
	if !reflect.DeepEqual(a, want) || !reflect.DeepEqual(b, want) {
		t.Errorf("observed\n%+v\n%+v\nwant\n%+v", a, b, want)
	}
}

// TestObserveReentrant: a hook may call the cloud, even to change it; the
// nested change is delivered after the current one, in order.
func TestObserveReentrant(t *testing.T) {
	f := newFixture(t, Config{})
	var seen []string
	f.c.Observe(func(ch Change) {
		seen = append(seen, ch.Reason+" "+string(ch.Volume))
		if ch.Volume == "excl" && ch.Attached {
			if _, err := f.c.Attach(context.Background(), "multi", ch.Instance); err != nil {
				t.Error(err)
			}
		}
		_ = f.c.Attachments()
	})
	f.attach(t, "excl", f.i1)
	if want := []string{"attach excl", "attach multi"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("seen %v, want %v", seen, want)
	}
	if got := f.c.Attachments(); !reflect.DeepEqual(got, attachments("excl", string(f.i1), "multi", string(f.i1))) {
		t.Errorf("attachments %v", got)
	}
}

// TestObserveSyncFrom: the hook starts from the attachments current at its
// registration, sees every later change, and none once stopped.
func TestObserveSyncFrom(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	f.attach(t, "multi", f.i2)
	f.attach(t, "excl", f.i1)
	f.attach(t, "multi", f.i1)
	var all []Change
	f.c.ObserveSync(func(ch Change) { all = append(all, ch) })
	var seen []Change
	current, stop := f.c.ObserveSyncFrom(func(ch Change) { seen = append(seen, ch) })
	t0 := f.clock.Now()
	snap := func(vol cloud.VolumeID, inst cloud.InstanceID, node cloud.NodeName, mode cloud.AccessMode) Change {
		return Change{Time: t0, Volume: vol, Instance: inst, Node: node, Mode: mode, Attached: true, Reason: ReasonSnapshot}
	}
	wantCurrent := []Change{
		snap("excl", f.i1, "n1", cloud.Exclusive),
		snap("multi", f.i1, "n1", cloud.MultiNode),
		snap("multi", f.i2, "n2", cloud.MultiNode),
	}
	if !reflect.DeepEqual(current, wantCurrent) {
		t.Errorf("current\n%+v\nwant\n%+v", current, wantCurrent)
	}
	mustNil(t, f.c.Detach(ctx, "excl", f.i1))
	mustNil(t, f.c.Terminate(f.i2))
	stop()
	stop() // harmless
	f.attach(t, "excl", f.i3)
	want := []Change{
		{Time: t0, Volume: "excl", Instance: f.i1, Node: "n1", Mode: cloud.Exclusive, Reason: ReasonDetach},
		{Time: t0, Volume: "multi", Instance: f.i2, Node: "n2", Mode: cloud.MultiNode, Reason: ReasonTerminate},
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("seen\n%+v\nwant\n%+v", seen, want)
	}
	if len(all) != 3 {
		t.Errorf("the other hook saw %d changes, want 3 (stop removed it too?): %+v", len(all), all)
	}
}

// TestObserveSyncFromUnwritten: with a state file, a change applied in
// memory but not yet written is not in current; the hook hears of it once
// it is written, and never if its write fails.
func TestObserveSyncFromUnwritten(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "written", true: "write fails"}[fail], func(t *testing.T) {
			f := newFixture(t, Config{StatePath: filepath.Join(t.TempDir(), "cloud.json")})
			f.attach(t, "multi", f.i2)
			release := make(chan error)
			setAppend(f.c, func(file *os.File, data []byte) error {
				if err := <-release; err != nil {
					return err
				}
				return f.c.state.appendAndSync(file, data)
			})
			attached := make(chan error, 1)
			go func() {
				_, err := f.c.Attach(context.Background(), "excl", f.i1)
				attached <- err
			}()
			waitUnwritten(t, f.c, 1)
			var seen []Change
			current, stop := f.c.ObserveSyncFrom(func(ch Change) { seen = append(seen, ch) })
			defer stop()
			if len(current) != 1 || current[0].Volume != "multi" || current[0].Instance != f.i2 {
				t.Errorf("current = %+v, want only multi on %s (excl's write is pending)", current, f.i2)
			}
			var wantErr error
			if fail {
				wantErr = errors.New("disk full")
			}
			release <- wantErr
			if err := <-attached; (err != nil) != fail {
				t.Fatalf("attach: %v, want failure %v", err, fail)
			}
			switch {
			case fail && len(seen) != 0:
				t.Errorf("a change whose write failed was seen: %+v", seen)
			case !fail && (len(seen) != 1 || seen[0].Volume != "excl" || !seen[0].Attached):
				t.Errorf("seen %+v, want the attach of excl", seen)
			}
		})
	}
}

// waitUnwritten waits until n changes wait for their write.
func waitUnwritten(t *testing.T, c *Cloud, n int) {
	t.Helper()
	var got int
	if !testkit.Until(10*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		got = len(c.obs.unwritten)
		return got == n
	}) {
		t.Fatalf("not within 10s: %d changes wait for their write, want %d", got, n)
	}
}
