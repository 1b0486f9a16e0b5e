package sim

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tether/tether/cloud"
)

func TestConcurrentExclusiveAttach(t *testing.T) {
	for round := range 20 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			f := newFixture(t, Config{})
			var mu sync.Mutex
			var observed []Change
			f.c.Observe(func(ch Change) { mu.Lock(); observed = append(observed, ch); mu.Unlock() })
			const workers = 32
			errs := make([]error, workers)
			winners := make([]cloud.InstanceID, workers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range workers {
				inst := []cloud.InstanceID{f.i1, f.i2}[i%2]
				wg.Go(func() {
					<-start
					if _, err := f.c.Attach(context.Background(), "excl", inst); err == nil {
						winners[i] = inst
					} else {
						errs[i] = err
					}
				})
			}
			close(start)
			wg.Wait()
			checkOneWinner(t, f, winners, errs)
			if len(observed) != 1 || !observed[0].Attached {
				t.Errorf("observed %+v, want one attach", observed)
			}
		})
	}
}

func checkOneWinner(t *testing.T, f *fixture, winners []cloud.InstanceID, errs []error) {
	t.Helper()
	att := f.c.Attachments()["excl"]
	if len(att) != 1 {
		t.Fatalf("excl attached to %v, want exactly one instance", att)
	}
	for i, w := range winners {
		if errs[i] != nil {
			checkErr(t, errs[i], cloud.KindAttachedElsewhere, string(att[0]))
		} else if w != att[0] {
			t.Errorf("worker %d attached to %s, but %s won", i, w, att[0])
		}
	}
	if n := f.c.Calls().AttachNew; n != 1 {
		t.Errorf("AttachNew = %d, want 1", n)
	}
}

func TestConcurrentMixedCalls(t *testing.T) {
	f := newFixture(t, Config{ThrottleRate: 1e9, Seed: 7})
	f.c.SetErrorRate(MethodAttach, 0.2, cloud.KindRetryable)
	var mu sync.Mutex
	attached := map[string]bool{}
	f.c.Observe(func(ch Change) {
		mu.Lock()
		defer mu.Unlock()
		attached[string(ch.Volume)+"/"+string(ch.Instance)] = ch.Attached
		_ = f.c.Attachments() // hooks may call the cloud
	})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for _, call := range callsOf(f) {
				_ = call(context.Background())
			}
			_ = f.c.Terminate(f.i3)
			_ = f.c.Start(f.i3)
			_, _ = f.c.Attach(context.Background(), "multi", []cloud.InstanceID{f.i1, f.i2, f.i3}[i%3])
			_ = f.c.Calls()
		})
	}
	wg.Wait()
	truth := map[string]bool{}
	for vol, insts := range f.c.Attachments() {
		for _, inst := range insts {
			truth[string(vol)+"/"+string(inst)] = true
		}
	}
	for k, v := range attached {
		if v != truth[k] {
			t.Errorf("observers say %s attached=%v, ground truth says %v", k, v, truth[k])
		}
	}
}
