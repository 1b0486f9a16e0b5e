package grpcstacks

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// With returns the stacks of this process's goroutines that contain
// substr (a frame, or a "created by" line).
func With(substr string) [][]byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out [][]byte
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte(substr)) {
			out = append(out, g)
		}
	}
	return out
}

// Running returns the stacks of the goroutines that run gRPC code.
func Running() [][]byte { return With("google.golang.org/grpc") }

// Dialing counts the gRPC client connections of this process that are
// trying to connect (or waiting to try again): each has one goroutine that
// gRPC's balancer started (addrConn.connect), which ends once the
// connection is up or closed.
func Dialing() int {
	return len(With("created by google.golang.org/grpc.(*acBalancerWrapper).Connect"))
}

// WaitQuiet waits until no goroutine of this process runs gRPC code, and
// fails the test with the first one's stack if one still does after bound.
func WaitQuiet(t testing.TB, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		live := Running()
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still run gRPC code %v on (a connection an earlier test left open?); the first:\n%s", len(live), bound, live[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
