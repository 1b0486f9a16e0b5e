package parallel

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestDo: every index runs exactly once, never more than limit at once.
func TestDo(t *testing.T) {
	for _, c := range []struct{ n, limit int }{{0, 4}, {1, 4}, {100, 1}, {100, 7}, {5, 32}} {
		var mu sync.Mutex
		seen := map[int]int{}
		var running, peak atomic.Int64
		Do(c.n, c.limit, func(i int) {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			mu.Lock()
			seen[i]++
			mu.Unlock()
			running.Add(-1)
		})
		if len(seen) != c.n {
			t.Fatalf("n=%d limit=%d: %d indexes ran", c.n, c.limit, len(seen))
		}
		for i, k := range seen {
			if k != 1 || i < 0 || i >= c.n {
				t.Fatalf("n=%d limit=%d: index %d ran %d times", c.n, c.limit, i, k)
			}
		}
		if int(peak.Load()) > max(c.limit, 1) {
			t.Fatalf("n=%d limit=%d: %d ran at once", c.n, c.limit, peak.Load())
		}
	}
}
