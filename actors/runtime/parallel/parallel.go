package parallel

import (
	"sync"
	"sync/atomic"
)

// Do runs f for 0..n-1, at most limit at once (limit < 1: one), in no
// particular order, and returns when all returned.
func Do(n, limit int, f func(i int)) {
	if n <= 1 || limit <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, limit) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}
