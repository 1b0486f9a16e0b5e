package controller

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/cloud/testkit"
)

// The queue never runs more than max calls at once, runs them in the
// order asked, and leaves no worker once it is empty.
func TestCallQueueBoundOrderAndIdle(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct{ max, calls int }{{1, 20}, {3, 50}, {8, 5}} {
		t.Run(fmt.Sprintf("max%d_calls%d", tc.max, tc.calls), func(t *testing.T) {
			q := newCallQueue(tc.max)
			release := make(chan struct{})
			var mu sync.Mutex
			var started []int
			running, peak := 0, 0
			var done sync.WaitGroup
			done.Add(tc.calls)
			for i := range tc.calls {
				q.run(func() {
					defer done.Done()
					mu.Lock()
					started = append(started, i)
					running++
					peak = max(peak, running)
					mu.Unlock()
					<-release
					mu.Lock()
					running--
					mu.Unlock()
				})
			}
			// Every worker it may start is busy; the rest wait their turn.
			want := min(tc.max, tc.calls)
			testkit.Eventually(t, 10*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return running == want
			}, "workers busy")
			if w, waiting, _ := q.busy(); w != want || waiting != tc.calls-want {
				t.Fatalf("busy = %d workers, %d waiting; want %d and %d", w, waiting, want, tc.calls-want)
			}
			close(release)
			done.Wait()
			testkit.Eventually(t, 10*time.Second, func() bool { w, _, _ := q.busy(); return w == 0 }, "workers gone")
			if peak != want {
				t.Errorf("peak %d calls at once, want %d", peak, want)
			}
			if tc.max == 1 && !slices.IsSorted(started) {
				t.Errorf("one worker ran calls out of order: %v", started)
			}
			if q.queue != nil {
				t.Errorf("empty queue keeps %d slots", cap(q.queue))
			}
		})
	}
}

// run never blocks, even with every worker stuck.
func TestCallQueueRunNeverBlocks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	q := newCallQueue(1)
	release := make(chan struct{})
	var done sync.WaitGroup
	done.Add(1000)
	for range 1000 {
		q.run(func() { <-release; done.Done() })
	}
	if _, waiting, _ := q.busy(); waiting != 999 {
		t.Fatalf("%d waiting, want 999", waiting)
	}
	close(release)
	done.Wait()
	testkit.Eventually(t, 10*time.Second, func() bool { w, _, _ := q.busy(); return w == 0 }, "worker gone")
}

// The volume actors' attaches go through the queue: with CallWorkers 2,
// six volumes wanted at once reach the cloud two at a time, and all are
// attached once the cloud answers.
func TestVolumeCallsBounded(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.CallWorkers = 2 })
	gate := make(chan struct{})
	r.calls.mu.Lock()
	r.calls.gate = gate
	r.calls.mu.Unlock()
	r.node("n1")
	vols := []cloud.VolumeID{"v1", "v2", "v3", "v4", "v5", "v6"}
	for i, v := range vols {
		r.volume(v, cloud.Exclusive)
		r.workload(fmt.Sprintf("w%d", i), "n1", v)
	}
	r.eventually("two attaches held, four waiting", func() bool {
		now, _ := r.calls.attaches()
		_, waiting, _ := r.ctl.env.calls.busy()
		return now == 2 && waiting == 4
	})
	close(gate)
	for _, v := range vols {
		r.eventually(string(v)+" attached", r.settled(v, "n1"))
	}
	if _, peak := r.calls.attaches(); peak != 2 {
		t.Fatalf("peak %d attaches at once, want 2 (CallWorkers)", peak)
	}
}
