package distributed

import (
	"context"
	"errors"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// A chaos control's Faults reach the member's cloud calls through
// cloud/faulty, each on the calls it names; zero Faults turn them off.
func TestFaultsApplyToTheirCalls(t *testing.T) {
	s := sim.New(sim.Config{})
	inst := s.AddInstance("n1")
	s.CreateVolume("v", cloud.Exclusive)
	c := newFaultyCloud(s)
	ctx := context.Background()

	c.set(Faults{ErrorRate: 1, Seed: 7})
	if _, err := c.Attach(ctx, "v", inst); cloud.Classify(err) != cloud.KindRetryable {
		t.Fatalf("attach under ErrorRate 1: %v, want retryable", err)
	}
	if len(s.Attachments()) != 0 {
		t.Fatal("an injected failure reached the cloud")
	}
	if _, err := c.InstanceID(ctx, "n1"); err != nil {
		t.Fatalf("instance_id under ErrorRate 1: %v, want no fault (not a failing call)", err)
	}

	c.set(Faults{ReplyLoss: 1})
	if _, err := c.Attach(ctx, "v", inst); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("attach under ReplyLoss 1: %v, want a lost reply", err)
	}
	if len(s.Attachments()["v"]) != 1 {
		t.Fatal("a lost reply's attach did not land")
	}

	c.set(Faults{ThrottleQPS: 0.001, ThrottleBurst: 1})
	if _, err := c.InstanceID(ctx, "n1"); err != nil {
		t.Fatalf("first call of the burst: %v", err)
	}
	if err := c.Detach(ctx, "v", inst); !errors.Is(err, cloud.ErrThrottled) {
		t.Fatalf("second call: %v, want throttled", err)
	}

	c.set(Faults{})
	if err := c.Detach(ctx, "v", inst); err != nil || len(s.Attachments()) != 0 {
		t.Fatalf("no faults: detach %v, attachments %v", err, s.Attachments())
	}
}
