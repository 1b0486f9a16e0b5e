package sim

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

func TestPermissiveAcceptsSecondExclusiveAttach(t *testing.T) {
	f := newFixture(t, Config{Permissive: true})
	var seen []Change
	f.c.ObserveSync(func(ch Change) { seen = append(seen, ch) })
	f.attach(t, "excl", f.i1)
	f.attach(t, "excl", f.i2)
	if got := f.c.Attachments()["excl"]; !slices.Equal(got, []cloud.InstanceID{f.i1, f.i2}) {
		t.Fatalf("attachments %v, want both instances", got)
	}
	if len(seen) != 2 || !seen[1].Attached || seen[1].Instance != f.i2 || seen[1].Mode != cloud.Exclusive {
		t.Fatalf("sync observer saw %+v", seen)
	}
}

func TestStrictRefusesSecondExclusiveAttach(t *testing.T) {
	f := newFixture(t, Config{})
	f.attach(t, "excl", f.i1)
	_, err := f.c.Attach(context.Background(), "excl", f.i2)
	checkErr(t, err, cloud.KindAttachedElsewhere)
}

// A call once sent is carried out although its caller stopped waiting.
func TestCallLandsAfterItsCallerLeft(t *testing.T) {
	for _, permissive := range []bool{false, true} {
		f := newFixture(t, Config{Latency: 50 * time.Millisecond, Permissive: permissive})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := f.c.Attach(ctx, "excl", f.i1); errc <- err }()
		testkit.Eventually(t, 10*time.Second, func() bool { return f.c.Calls().Calls[MethodAttach] == 1 }, "the call to be sent")
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("caller got %v, want canceled", err)
		}
		testkit.Eventually(t, 10*time.Second, func() bool { return len(f.c.Attachments()["excl"]) == 1 }, "the abandoned attach to land")
		if f.c.Calls().AttachNew != 1 {
			t.Errorf("AttachNew %d, want 1", f.c.Calls().AttachNew)
		}
	}
}

// A sent call whose deadline has passed by the time it would take effect is
// dropped by the cloud: it never lands late.
func TestCallNeverLandsAfterItsDeadline(t *testing.T) {
	f := newFixture(t, Config{})
	ran := false
	err := f.c.apply(MethodAttach, "excl to n1", time.Now().Add(-time.Millisecond), true, func() error { ran = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Fatalf("apply past the deadline: err %v, effect ran %v", err, ran)
	}
	if f.c.Calls().Errors[MethodAttach] != 1 {
		t.Errorf("a dropped call counts as an error: %+v", f.c.Calls())
	}
	mustNil(t, f.c.apply(MethodAttach, "excl to n1", time.Now().Add(time.Hour), true, func() error { ran = true; return nil }))
	if !ran {
		t.Fatal("apply before the deadline did not run the effect")
	}
}

func TestReplyLost(t *testing.T) {
	for _, m := range []Method{MethodAttach, MethodDetach} {
		f := newFixture(t, Config{Seed: 1})
		if m == MethodDetach {
			f.attach(t, "excl", f.i1)
		}
		f.c.SetReplyLoss(m, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		var err error
		if m == MethodAttach {
			_, err = f.c.Attach(ctx, "excl", f.i1)
		} else {
			err = f.c.Detach(ctx, "excl", f.i1)
		}
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: caller got %v, want a timeout", m, err)
		}
		if on := len(f.c.Attachments()["excl"]) == 1; on != (m == MethodAttach) {
			t.Fatalf("%s: the effect did not happen: %v", m, f.c.Attachments())
		}
		// Without a deadline the loss is reported at once, as retryable.
		f.c.SetReplyLoss(m, 1)
		_, err = f.c.InstanceID(context.Background(), "n1")
		if err != nil {
			t.Fatalf("InstanceID has no loss set: %v", err)
		}
		f.c.SetReplyLoss(MethodInstanceID, 1)
		_, err = f.c.InstanceID(context.Background(), "n1")
		checkErr(t, err, cloud.KindRetryable, "reply lost")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%v: a lost reply must read as a timeout (outcome unknown)", err)
		}
	}
}

func TestHungCallLandsAtItsDeadline(t *testing.T) {
	// Sent 1s before its 2s deadline: on a loaded machine a timer fires
	// late, and a call whose send came after its deadline is dropped (as
	// the cloud drops it), which is not what this test is about.
	f := newFixture(t, Config{Seed: 1, HangMargin: time.Second})
	f.c.SetHangRate(MethodAttach, 1)
	var landed time.Time
	f.c.ObserveSync(func(Change) { landed = time.Now() })
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	_, err := f.c.Attach(ctx, "excl", f.i1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if len(f.c.Attachments()["excl"]) != 1 {
		t.Fatal("the hung attach did not land")
	}
	if landed.Before(start.Add(time.Second-10*time.Millisecond)) || landed.After(deadline) {
		t.Fatalf("landed %v after the start, deadline %v after", landed.Sub(start), deadline.Sub(start))
	}
	// Without a deadline a hung call waits for its context and never lands.
	f.c.SetHangRate(MethodDetach, 1)
	ctx2, cancel2 := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- f.c.Detach(ctx2, "excl", f.i1) }()
	testkit.Eventually(t, 10*time.Second, func() bool { return f.c.Calls().Calls[MethodDetach] == 1 }, "the detach to be sent")
	cancel2()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want canceled", err)
	}
	if len(f.c.Attachments()["excl"]) != 1 {
		t.Fatal("a hung call without a deadline landed")
	}
}

func TestReplaceInstance(t *testing.T) {
	f := newFixture(t, Config{})
	var seen []Change
	f.c.ObserveSync(func(ch Change) { seen = append(seen, ch) })
	f.attach(t, "excl", f.i1)
	ctx := context.Background()
	id, err := f.c.Replace("n1")
	mustNil(t, err)
	if id == f.i1 || id == "" {
		t.Fatalf("new instance %q", id)
	}
	if got, _ := f.c.InstanceID(ctx, "n1"); got != id {
		t.Fatalf("n1 resolves to %s, want %s", got, id)
	}
	if len(f.c.Attachments()) != 0 || len(seen) != 2 || seen[1].Reason != ReasonTerminate {
		t.Fatalf("attachments %v, changes %+v", f.c.Attachments(), seen)
	}
	_, err = f.c.Attach(ctx, "excl", f.i1)
	checkErr(t, err, cloud.KindNotFound)
	checkErr(t, f.c.Detach(ctx, "excl", f.i1), cloud.KindNotFound)
	got, err := f.c.InstanceVolumes(ctx, []cloud.InstanceID{f.i1, id})
	mustNil(t, err)
	if _, ok := got[f.i1]; ok || got[id] == nil {
		t.Fatalf("InstanceVolumes %v: the old instance must be absent, the new one present", got)
	}
	f.attach(t, "excl", id)
}

func TestDeleteInstance(t *testing.T) {
	f := newFixture(t, Config{})
	f.attach(t, "multi", f.i2)
	mustNil(t, f.c.Delete(f.i2))
	ctx := context.Background()
	_, err := f.c.InstanceID(ctx, "n2")
	checkErr(t, err, cloud.KindNotFound)
	checkErr(t, f.c.Detach(ctx, "multi", f.i2), cloud.KindNotFound)
	if len(f.c.Attachments()) != 0 {
		t.Fatalf("attachments %v", f.c.Attachments())
	}
	checkErr(t, f.c.Delete(f.i2), cloud.KindNotFound)
	if id := f.c.AddInstance("n2"); id == f.i2 {
		t.Fatal("a deleted instance came back")
	}
}

func TestConsoleDetach(t *testing.T) {
	f := newFixture(t, Config{})
	var seen []Change
	f.c.ObserveSync(func(ch Change) { seen = append(seen, ch) })
	f.attach(t, "excl", f.i1)
	mustNil(t, f.c.ConsoleDetach("excl", f.i1))
	mustNil(t, f.c.ConsoleDetach("excl", f.i1)) // nothing attached: nothing to do
	if len(f.c.Attachments()) != 0 || f.c.Calls().DetachNew != 0 || f.c.Calls().Calls[MethodDetach] != 0 {
		t.Fatalf("attachments %v, counters %+v", f.c.Attachments(), f.c.Calls())
	}
	if len(seen) != 2 || seen[1].Reason != ReasonConsole || !f.c.Running(f.i1) {
		t.Fatalf("changes %+v, running %v", seen, f.c.Running(f.i1))
	}
	checkErr(t, f.c.ConsoleDetach("nope", f.i1), cloud.KindNotFound)
}
