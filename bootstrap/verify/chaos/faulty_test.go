package chaos

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// effects is a provider that records when each attach took effect.
type effects struct {
	mu      sync.Mutex
	attachs []time.Time
}

func (p *effects) InstanceID(context.Context, cloud.NodeName) (cloud.InstanceID, error) {
	return "i-1", nil
}

func (p *effects) Attach(ctx context.Context, _ cloud.VolumeID, _ cloud.InstanceID) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err // as a cloud does: a done ctx is not sent
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attachs = append(p.attachs, time.Now())
	return "/dev/x", nil
}

func (p *effects) Detach(context.Context, cloud.VolumeID, cloud.InstanceID) error { return nil }

func (p *effects) VolumesAreAttached(context.Context, map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	return nil, nil
}

func (p *effects) InstanceVolumes(context.Context, []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	return nil, nil
}

func (p *effects) BatchSize() int { return 1 }

func (p *effects) landed() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.attachs)
}

func within(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// Faulty keeps cloud.Provider's contract under each knob: what fails
// before it is sent has no effect and says why by its class; a lost reply
// took effect, and its caller waits for its deadline; a hung call lands
// at the end of its deadline, or never without one.
func TestFaultyKeepsTheProviderContract(t *testing.T) {
	t.Run("done ctx: not sent", func(t *testing.T) {
		p := &effects{}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := NewFaulty(p, 1).Attach(ctx, "v", "i-1"); !errors.Is(err, context.Canceled) || len(p.landed()) != 0 {
			t.Fatalf("err %v, %d effects", err, len(p.landed()))
		}
	})
	t.Run("injected errors: retryable, no effect; instance_id spared", func(t *testing.T) {
		p := &effects{}
		f := NewFaulty(p, 1)
		f.SetErrorRate(1)
		if _, err := f.Attach(context.Background(), "v", "i-1"); cloud.Classify(err) != cloud.KindRetryable || len(p.landed()) != 0 {
			t.Fatalf("err %v, %d effects", err, len(p.landed()))
		}
		if _, err := f.InstanceID(context.Background(), "n1"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("throttled: no effect", func(t *testing.T) {
		p := &effects{}
		f := NewFaulty(p, 1)
		f.SetThrottle(0.001, 1)
		_, err1 := f.Attach(context.Background(), "v", "i-1")
		_, err2 := f.Attach(context.Background(), "v", "i-1")
		if err1 != nil || cloud.Classify(err2) != cloud.KindThrottled || len(p.landed()) != 1 {
			t.Fatalf("errs %v, %v, %d effects", err1, err2, len(p.landed()))
		}
	})
	t.Run("lost reply: took effect, caller waits for its deadline", func(t *testing.T) {
		p := &effects{}
		f := NewFaulty(p, 1)
		f.SetReplyLoss(1)
		ctx, cancel := within(50 * time.Millisecond)
		defer cancel()
		t0 := time.Now()
		_, err := f.Attach(ctx, "v", "i-1")
		if !errors.Is(err, context.DeadlineExceeded) || len(p.landed()) != 1 || time.Since(t0) < 50*time.Millisecond {
			t.Fatalf("err %v after %s, %d effects", err, time.Since(t0), len(p.landed()))
		}
		if _, err := f.Attach(context.Background(), "v", "i-1"); cloud.Classify(err) != cloud.KindRetryable || !errors.Is(err, context.DeadlineExceeded) || len(p.landed()) != 2 {
			t.Fatalf("without a deadline: err %v, %d effects", err, len(p.landed()))
		}
	})
	t.Run("hung: lands at the end of its deadline, never without one", func(t *testing.T) {
		p := &effects{}
		f := NewFaulty(p, 1)
		f.SetHangRate(1)
		// A hung call is sent 10 ms before its deadline: on a loaded host
		// it may be dropped, past its deadline; one of a few must land.
		for try := 0; len(p.landed()) == 0 && try < 5; try++ {
			ctx, cancel := within(100 * time.Millisecond)
			deadline, _ := ctx.Deadline()
			_, err := f.Attach(ctx, "v", "i-1")
			cancel()
			got := p.landed()
			if !errors.Is(err, context.DeadlineExceeded) || time.Now().Before(deadline) || len(got) > 1 ||
				len(got) == 1 && (got[0].Before(deadline.Add(-15*time.Millisecond)) || got[0].After(deadline)) {
				t.Fatalf("err %v, effects %v, deadline %v", err, got, deadline)
			}
		}
		if len(p.landed()) != 1 {
			t.Fatal("no hung call landed at the end of its deadline")
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		if _, err := f.Attach(ctx, "v", "i-1"); !errors.Is(err, context.Canceled) || len(p.landed()) != 1 {
			t.Fatalf("without a deadline: err %v, %d effects", err, len(p.landed()))
		}
		if _, err := f.InstanceVolumes(context.Background(), []cloud.InstanceID{"i-1"}); err != nil {
			t.Fatalf("queries do not hang: %v", err)
		}
	})
	t.Run("cancelled during latency: not sent", func(t *testing.T) {
		p := &effects{}
		f := NewFaulty(p, 1)
		f.SetLatency(time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Millisecond, cancel)
		if _, err := f.Attach(ctx, "v", "i-1"); !errors.Is(err, context.Canceled) || len(p.landed()) != 0 {
			t.Fatalf("err %v, %d effects", err, len(p.landed()))
		}
	})
}

// The same seed and the same calls give the same faults.
func TestFaultyIsSeeded(t *testing.T) {
	draws := func(seed uint64) []bool {
		f := NewFaulty(&effects{}, seed)
		f.SetErrorRate(0.5)
		var out []bool
		for range 64 {
			_, err := f.Attach(context.Background(), "v", "i-1")
			out = append(out, err != nil)
		}
		return out
	}
	a := draws(7)
	if !slices.Equal(a, draws(7)) || slices.Equal(a, draws(8)) || !slices.Contains(a, true) || !slices.Contains(a, false) {
		t.Fatalf("seed 7 drew %v", a)
	}
}
