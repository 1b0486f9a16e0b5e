package sim

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// callsOf returns one call of every provider method that would change or
// read state on the fixture.
func callsOf(f *fixture) map[Method]func(ctx context.Context) error {
	return map[Method]func(ctx context.Context) error{
		MethodInstanceID: func(ctx context.Context) error { _, err := f.c.InstanceID(ctx, "n1"); return err },
		MethodAttach:     func(ctx context.Context) error { _, err := f.c.Attach(ctx, "multi", f.i2); return err },
		MethodDetach:     func(ctx context.Context) error { return f.c.Detach(ctx, "excl", f.i1) },
		MethodVolumesAreAttached: func(ctx context.Context) error {
			_, err := f.c.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{f.i1: {"excl"}})
			return err
		},
		MethodInstanceVolumes: func(ctx context.Context) error {
			_, err := f.c.InstanceVolumes(ctx, []cloud.InstanceID{f.i1})
			return err
		},
	}
}

func TestCancelledContextHasNoEffect(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, latency := range []time.Duration{0, time.Hour} {
		f := newFixture(t, Config{})
		f.attach(t, "excl", f.i1)
		f.c.SetLatency(latency)
		f.c.FailNext(MethodAttach, 1, cloud.KindTerminal)
		before := f.c.Attachments()
		for m, call := range callsOf(f) {
			t.Run(latency.String()+"/"+string(m), func(t *testing.T) {
				if err := call(cancelled); !isCtxErr(err) {
					t.Fatalf("got %v, want the context's error", err)
				}
				if got := len(f.c.Attachments()); got != len(before) || f.c.Attachments()["excl"][0] != f.i1 {
					t.Errorf("cancelled call changed the attachments: %v", f.c.Attachments())
				}
				if cs := f.c.Calls(); cs.Calls[m] != cs.Errors[m]+boolInt(m == MethodAttach) {
					t.Errorf("counters %+v", cs)
				}
			})
		}
		// The injected failure was not consumed by the cancelled attach.
		f.c.SetLatency(0)
		_, err := f.c.Attach(context.Background(), "multi", f.i2)
		checkErr(t, err, cloud.KindTerminal)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestLatencyDeadline(t *testing.T) {
	f := newFixture(t, Config{Latency: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err := f.c.Attach(ctx, "excl", f.i1)
	if err != context.DeadlineExceeded {
		t.Fatalf("got %v, want deadline exceeded", err)
	}
	if len(f.c.Attachments()) != 0 || f.c.Calls().AttachNew != 0 {
		t.Error("timed-out attach had an effect")
	}
	checkErr(t, err, cloud.KindRetryable) // outcome unknown to the caller
	f.c.SetLatency(0)
	f.attach(t, "excl", f.i1)
}

func TestLatencyDelaysCall(t *testing.T) {
	const latency = 20 * time.Millisecond
	f := newFixture(t, Config{})
	f.c.SetLatency(latency)
	start := time.Now()
	f.attach(t, "excl", f.i1)
	if d := time.Since(start); d < latency {
		t.Errorf("call took %v, latency is %v", d, latency)
	}
}

// TestLatencyDoesNotHoldLock reads the cloud while a call sleeps: the read
// must not wait for the sleeping call.
func TestLatencyDoesNotHoldLock(t *testing.T) {
	f := newFixture(t, Config{Latency: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := f.c.Attach(ctx, "excl", f.i1)
		done <- err
	}()
	for f.c.Calls().Calls[MethodAttach] == 0 { // admitted, now sleeping
		runtime.Gosched()
	}
	_ = f.c.Attachments()
	f.c.SetLatency(0)
	f.attach(t, "multi", f.i1) // not blocked by the sleeping call
	cancel()
	if err := <-done; !isCtxErr(err) {
		t.Fatalf("got %v", err)
	}
	if got := f.c.Attachments(); len(got) != 1 {
		t.Errorf("attachments %v", got)
	}
}
