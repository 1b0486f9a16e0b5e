package sim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

func TestFailNext(t *testing.T) {
	kinds := []cloud.Kind{
		cloud.KindRetryable, cloud.KindThrottled, cloud.KindTerminal,
		cloud.KindAttachedElsewhere, cloud.KindLimitReached, cloud.KindNotFound,
	}
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			f := newFixture(t, Config{})
			ctx := context.Background()
			f.c.FailNext(MethodAttach, 2, kind)
			for i := range 2 {
				_, err := f.c.Attach(ctx, "excl", f.i1)
				checkErr(t, err, kind, "excl", string(f.i1), "injected")
				if len(f.c.Attachments()) != 0 {
					t.Fatalf("failed call %d had an effect", i)
				}
			}
			mustNil(t, f.c.Detach(ctx, "excl", f.i1)) // other methods unaffected
			f.attach(t, "excl", f.i1)
			cs := f.c.Calls()
			if cs.Calls[MethodAttach] != 3 || cs.Errors[MethodAttach] != 2 || cs.AttachNew != 1 || cs.Throttled[MethodAttach] != 0 {
				t.Errorf("counters %+v", cs)
			}
		})
	}
}

func TestFailNextEveryMethod(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	calls := map[Method]func() error{
		MethodInstanceID: func() error { _, err := f.c.InstanceID(ctx, "n1"); return err },
		MethodAttach:     func() error { _, err := f.c.Attach(ctx, "multi", f.i1); return err },
		MethodDetach:     func() error { return f.c.Detach(ctx, "multi", f.i1) },
		MethodVolumesAreAttached: func() error {
			_, err := f.c.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{f.i1: {"multi"}})
			return err
		},
		MethodInstanceVolumes: func() error { _, err := f.c.InstanceVolumes(ctx, []cloud.InstanceID{f.i1}); return err },
	}
	for m, call := range calls {
		t.Run(string(m), func(t *testing.T) {
			f.c.FailNext(m, 1, cloud.KindTerminal)
			checkErr(t, call(), cloud.KindTerminal, string(m))
			checkErr(t, call(), cloud.KindNone)
		})
	}
}

func TestFailNextKindNoneAndCancel(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	f.c.FailNext(MethodInstanceID, 1, cloud.KindNone)
	_, err := f.c.InstanceID(ctx, "n1")
	if err == nil {
		t.Fatal("KindNone injection did not fail")
	}
	checkErr(t, err, cloud.KindRetryable, "unclassified")
	f.c.FailNext(MethodInstanceID, 5, cloud.KindTerminal)
	f.c.FailNext(MethodInstanceID, 0, cloud.KindTerminal)
	_, err = f.c.InstanceID(ctx, "n1")
	checkErr(t, err, cloud.KindNone)
}

// errorSequence makes n attach calls on a fresh cloud seeded with seed and
// returns which of them failed.
func errorSequence(t *testing.T, seed int64, p float64, n int) []bool {
	t.Helper()
	f := newFixture(t, Config{Seed: seed})
	f.c.SetErrorRate(MethodAttach, p, cloud.KindThrottled)
	out := make([]bool, n)
	for i := range out {
		_, err := f.c.Attach(context.Background(), "multi", f.i1)
		if err != nil {
			checkErr(t, err, cloud.KindThrottled, "injected")
			out[i] = true
			if i == 0 && len(f.c.Attachments()) != 0 {
				t.Fatal("failed call had an effect")
			}
		}
	}
	return out
}

func TestSetErrorRate(t *testing.T) {
	const n = 200
	a, b := errorSequence(t, 42, 0.5, n), errorSequence(t, 42, 0.5, n)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed gave different failure sequences")
	}
	if reflect.DeepEqual(a, errorSequence(t, 43, 0.5, n)) {
		t.Error("different seeds gave the same failure sequence")
	}
	failures := 0
	for _, failed := range a {
		if failed {
			failures++
		}
	}
	if failures < n/4 || failures > 3*n/4 {
		t.Errorf("%d failures of %d at p=0.5", failures, n)
	}
	for _, tt := range []struct {
		p    float64
		want int
	}{{0, 0}, {-1, 0}, {1, n}, {2, n}} {
		t.Run(fmt.Sprint(tt.p), func(t *testing.T) {
			got := 0
			for _, failed := range errorSequence(t, 1, tt.p, n) {
				if failed {
					got++
				}
			}
			if got != tt.want {
				t.Errorf("%d failures, want %d", got, tt.want)
			}
		})
	}
}

func TestFailNextBeforeErrorRate(t *testing.T) {
	f := newFixture(t, Config{})
	f.c.SetErrorRate(MethodDetach, 1, cloud.KindRetryable)
	f.c.FailNext(MethodDetach, 1, cloud.KindNotFound)
	ctx := context.Background()
	checkErr(t, f.c.Detach(ctx, "excl", f.i1), cloud.KindNotFound)
	checkErr(t, f.c.Detach(ctx, "excl", f.i1), cloud.KindRetryable)
	f.c.SetErrorRate(MethodDetach, 0, cloud.KindRetryable)
	checkErr(t, f.c.Detach(ctx, "excl", f.i1), cloud.KindNone)
}

func TestThrottle(t *testing.T) {
	f := newFixture(t, Config{ThrottleRate: 2, ThrottleBurst: 3})
	ctx := context.Background()
	call := func() error { _, err := f.c.InstanceID(ctx, "n1"); return err }
	for range 3 { // burst
		checkErr(t, call(), cloud.KindNone)
	}
	err := call()
	checkErr(t, err, cloud.KindThrottled, string(MethodInstanceID))
	f.clock.Advance(250 * time.Millisecond) // half a token
	checkErr(t, call(), cloud.KindThrottled)
	f.clock.Advance(250 * time.Millisecond) // one token
	checkErr(t, call(), cloud.KindNone)
	checkErr(t, call(), cloud.KindThrottled)
	// The bucket is shared by all methods and a throttled call has no effect.
	_, err = f.c.Attach(ctx, "excl", f.i1)
	checkErr(t, err, cloud.KindThrottled, "excl", string(f.i1))
	if len(f.c.Attachments()) != 0 {
		t.Error("throttled attach had an effect")
	}
	f.clock.Advance(time.Hour) // refill caps at the burst
	for range 3 {
		checkErr(t, call(), cloud.KindNone)
	}
	checkErr(t, call(), cloud.KindThrottled)

	cs := f.c.Calls()
	want := Counters{
		Calls:     map[Method]int{MethodInstanceID: 11, MethodAttach: 1},
		Errors:    map[Method]int{MethodInstanceID: 4, MethodAttach: 1},
		Throttled: map[Method]int{MethodInstanceID: 4, MethodAttach: 1},
	}
	if !reflect.DeepEqual(cs, want) {
		t.Errorf("counters %+v, want %+v", cs, want)
	}
}

func TestSetThrottle(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	call := func() error { _, err := f.c.InstanceID(ctx, "n1"); return err }
	for range 100 {
		checkErr(t, call(), cloud.KindNone) // unlimited
	}
	f.c.SetThrottle(1.5, 0) // burst defaults to 1
	checkErr(t, call(), cloud.KindNone)
	checkErr(t, call(), cloud.KindThrottled)
	f.c.SetThrottle(0, 0)
	checkErr(t, call(), cloud.KindNone)
}

func TestThrottleBeforeInjection(t *testing.T) {
	f := newFixture(t, Config{ThrottleRate: 1})
	f.c.FailNext(MethodDetach, 1, cloud.KindTerminal)
	ctx := context.Background()
	checkErr(t, f.c.Detach(ctx, "excl", f.i1), cloud.KindTerminal)
	f.c.FailNext(MethodDetach, 1, cloud.KindTerminal)
	err := f.c.Detach(ctx, "excl", f.i1)
	if !errors.Is(err, cloud.ErrThrottled) {
		t.Fatalf("got %v, want throttled", err)
	}
	f.clock.Advance(time.Second)
	checkErr(t, f.c.Detach(ctx, "excl", f.i1), cloud.KindTerminal) // not consumed by the throttled call
}
