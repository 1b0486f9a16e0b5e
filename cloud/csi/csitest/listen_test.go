package csitest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestStopRightAfterListen stops servers the moment Listen returns, from
// several goroutines at once. csi-test's Start returns before its goroutine
// calls Serve, and that goroutine panics (killing the test binary) when
// Stop came first; Listen must return only once the server serves.
func TestStopRightAfterListen(t *testing.T) {
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d := New(Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				socket := filepath.Join(dir, fmt.Sprintf("%d.sock", w))
				stop, err := d.Listen(socket, "n1")
				if err != nil {
					errs <- fmt.Errorf("listen %d/%d: %v", w, i, err)
					return
				}
				stop()
				_ = os.Remove(socket)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
