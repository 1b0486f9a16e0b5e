package distributed

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// waitGRPCQuiet waits until no goroutine of this process runs gRPC code,
// and fails the test if one still does after a bound. Proto.Actor's
// remote.Start writes gRPC's global logger without a lock (remote/server.go
// calls grpclog.SetLoggerV2), so a test that starts a remote in this
// process must do it while no gRPC connection from an earlier test is
// still winding down: its goroutines read that logger.
func waitGRPCQuiet(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		live := grpcGoroutines()
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still run gRPC code 20s on (a connection an earlier test left open?); the first:\n%s", len(live), live[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// grpcGoroutines returns the stacks of this process's goroutines that
// have a gRPC frame.
func grpcGoroutines() [][]byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var live [][]byte
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("google.golang.org/grpc")) {
			live = append(live, g)
		}
	}
	return live
}
