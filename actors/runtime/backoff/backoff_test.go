package backoff

import (
	"math"
	"testing"
	"time"
)

const capDelay = 2*time.Minute + 2*time.Second

func TestDefaultCurve(t *testing.T) {
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{-1, 0},
		{0, 0},
		{1, 500 * time.Millisecond},
		{2, time.Second},
		{3, 2 * time.Second},
		{4, 4 * time.Second},
		{5, 8 * time.Second},
		{6, 16 * time.Second},
		{7, 32 * time.Second},
		{8, 64 * time.Second},
		{9, capDelay}, // 128 s would exceed the cap
		{10, capDelay},
		{100, capDelay},
		{1100, capDelay}, // 2^1099 overflows float64 to +Inf
		{math.MaxInt, capDelay},
	}
	for _, tt := range tests {
		if got := Default.Delay(tt.failures, 0.99); got != tt.want {
			t.Errorf("Default.Delay(%d) = %v, want %v", tt.failures, got, tt.want)
		}
	}
}

func TestJitter(t *testing.T) {
	p := Default
	p.Jitter = 0.1
	tests := []struct {
		name     string
		failures int
		u        float64
		want     time.Duration
	}{
		{"no draw", 1, 0, 500 * time.Millisecond},
		{"half draw", 1, 0.5, 525 * time.Millisecond},
		{"draw just below 1", 2, 0.999999, time.Second + 99999900*time.Nanosecond},
		{"draw above range clamps to 1", 1, 7, 550 * time.Millisecond},
		{"negative draw clamps to 0", 1, -3, 500 * time.Millisecond},
		{"NaN draw counts as 0", 1, math.NaN(), 500 * time.Millisecond},
		{"near-full draw at 64 s stays under cap", 8, 0.99, 70*time.Second + 336*time.Millisecond},
		{"jitter capped at Max", 9, 0.99, capDelay},
		{"half draw at 64 s", 8, 0.5, 67*time.Second + 200*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Delay(tt.failures, tt.u); got != tt.want {
				t.Fatalf("Delay(%d, %v) = %v, want %v", tt.failures, tt.u, got, tt.want)
			}
		})
	}

	// Bounds over many draws: base <= delay <= min(base*(1+J), Max).
	for failures := 1; failures <= 12; failures++ {
		base := Default.Delay(failures, 0)
		upper := time.Duration(float64(base) * 1.1)
		if upper > capDelay {
			upper = capDelay
		}
		for i := 0; i < 100; i++ {
			u := float64(i) / 100
			if got := p.Delay(failures, u); got < base || got > upper {
				t.Fatalf("Delay(%d, %v) = %v outside [%v, %v]", failures, u, got, base, upper)
			}
		}
	}
}

func TestDegeneratePolicies(t *testing.T) {
	tests := []struct {
		name     string
		p        Policy
		failures int
		want     time.Duration
	}{
		{"zero policy", Policy{}, 3, 0},
		{"factor below 1 is constant", Policy{Initial: time.Second, Factor: 0.5}, 5, time.Second},
		{"NaN factor is constant", Policy{Initial: time.Second, Factor: math.NaN()}, 5, time.Second},
		{"no cap saturates at max duration", Policy{Initial: time.Second, Factor: 2}, 1000, math.MaxInt64},
		{"no cap, large but finite", Policy{Initial: time.Second, Factor: 2}, 11, 1024 * time.Second},
		{"negative jitter ignored", Policy{Initial: time.Second, Factor: 2, Jitter: -1}, 1, time.Second},
		{"huge jitter still capped", Policy{Initial: time.Second, Factor: 2, Max: 3 * time.Second, Jitter: 1e308}, 1, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.failures, 0.5); got != tt.want {
				t.Fatalf("Delay(%d) = %v, want %v", tt.failures, got, tt.want)
			}
		})
	}
}

func TestBackoffState(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var b Backoff
	if !b.Ready(t0) || b.Failures() != 0 || !b.RetryAt().IsZero() {
		t.Fatalf("zero Backoff: ready=%v failures=%d retryAt=%v", b.Ready(t0), b.Failures(), b.RetryAt())
	}

	now := t0
	for i, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second} {
		retryAt := b.Fail(now, Default, 0)
		if got := retryAt.Sub(now); got != want {
			t.Fatalf("failure %d: delay %v, want %v", i+1, got, want)
		}
		if !b.RetryAt().Equal(retryAt) || b.Failures() != i+1 {
			t.Fatalf("failure %d: RetryAt=%v Failures=%d", i+1, b.RetryAt(), b.Failures())
		}
		if b.Ready(retryAt.Add(-time.Nanosecond)) {
			t.Fatalf("failure %d: ready before retryAt", i+1)
		}
		if !b.Ready(retryAt) {
			t.Fatalf("failure %d: not ready at retryAt", i+1)
		}
		now = retryAt
	}

	b.Reset()
	if b.Failures() != 0 || !b.Ready(now) || !b.RetryAt().IsZero() {
		t.Fatalf("after Reset: failures=%d ready=%v", b.Failures(), b.Ready(now))
	}
	if got := b.Fail(now, Default, 0).Sub(now); got != 500*time.Millisecond {
		t.Fatalf("first failure after Reset: delay %v, want 500ms", got)
	}
}

func TestBackoffFailureCountSaturates(t *testing.T) {
	b := Backoff{failures: math.MaxInt}
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := b.Fail(now, Default, 0).Sub(now); got != capDelay {
		t.Fatalf("delay %v, want cap", got)
	}
	if b.Failures() != math.MaxInt {
		t.Fatalf("Failures = %d, want MaxInt", b.Failures())
	}
}
