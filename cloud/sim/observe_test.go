package sim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
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
