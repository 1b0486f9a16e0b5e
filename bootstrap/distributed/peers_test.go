package distributed_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/distributed"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// A member the others cannot reach over remote (here: it advertises an
// address nobody listens on, as a member started without the cluster's
// remote TLS, or behind a wrong --remote-advertise, is unreachable) never
// joins the placement: it says why and exits non-zero once its join bound
// passed, and the cluster keeps serving meanwhile: workloads applied
// while it tries reach their mounts, and no node goes NotReady.
func TestFleetUnreachableMemberNeverJoins(t *testing.T) {
	r := startRig(t, 2, 2)
	var docs []*messages.Document
	for _, n := range r.nodes {
		docs = append(docs, nodeDoc(n))
	}
	r.apply(docs...)
	r.place(map[string]cloud.NodeName{"w-1": "n1", "w-2": "n2"})
	r.converge("before the bad member", 60*time.Second)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close() // a port of its own; nobody listens on the advertised one
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bad := exec.CommandContext(ctx, binary, "controller", "--etcd", strings.Join(r.f.Etcd.Endpoints(), ","), "--cloud", r.f.CloudAddr(),
		"--remote-addr", addr, "--remote-advertise", "127.0.0.1:1", "--api-addr", "", "--join-timeout", "8s")
	var out bytes.Buffer
	bad.Stdout, bad.Stderr = &out, &out
	if err := bad.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bad.Wait() }()

	// While it tries to join, the cluster serves as before.
	r.place(map[string]cloud.NodeName{"w-3": "n1", "w-4": "n2", "w-1": "n2"})
	r.converge("while the bad member tries to join", 60*time.Second)

	// Ground truth: etcd's membership never lists it, as long as it runs.
	var ended error
	for running := true; running; {
		if ids := r.memberIDs(); len(ids) > 2 {
			t.Errorf("the unreachable member registered: members %v", ids)
		}
		select {
		case ended = <-done:
			running = false
		case <-ctx.Done():
			t.Fatalf("the unreachable member did not give up within its join bound; it said:\n%s", out.String())
		case <-time.After(100 * time.Millisecond): // polling pace
		}
	}
	var exit *exec.ExitError
	if !errors.As(ended, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the unreachable member ended with %v, want a non-zero exit; it said:\n%s", ended, out.String())
	}
	if s := out.String(); !strings.Contains(s, "cannot be reached over remote") || !strings.Contains(s, "--remote-advertise") {
		t.Errorf("the unreachable member did not say why:\n%s", s)
	}
	r.place(map[string]cloud.NodeName{"w-5": "n1"})
	r.converge("after it gave up", 60*time.Second)
	for _, n := range r.nodeStatuses() {
		if !n.GetStatus().GetReady() {
			t.Errorf("node %s is NotReady", n.GetSpec().GetName())
		}
	}

	// SIGTERM while it waits for its peers stops it within 10 s.
	lis, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = lis.Addr().String()
	_ = lis.Close()
	var said syncBuffer
	waiting := exec.Command(binary, "controller", "--etcd", strings.Join(r.f.Etcd.Endpoints(), ","), "--cloud", r.f.CloudAddr(),
		"--remote-addr", addr, "--remote-advertise", "127.0.0.1:1", "--api-addr", "", "--join-timeout", "5m")
	waiting.Stdout, waiting.Stderr = &said, &said
	if err := waiting.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- waiting.Wait() }()
	t.Cleanup(func() { _ = waiting.Process.Kill() })
	r.eventually("the member waits for its peers", 30*time.Second, func() bool { return strings.Contains(said.String(), "not joining yet") })
	if err := waiting.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("SIGTERM did not stop a member waiting for its peers within 10s; it said:\n%s", said.String())
	}
}

// syncBuffer is a bytes.Buffer a process may write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nodeStatuses lists every node as `tether get nodes` does.
func (r *rig) nodeStatuses() []*messages.NodeInfo {
	c, ctx, closeConn, err := r.f.API(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	defer func() { _ = closeConn() }()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := c.Get(cctx, &messages.GetRequest{Kind: "nodes"})
	if err != nil {
		r.t.Fatal(err)
	}
	return res.GetNodes()
}

// A member cut off from its peers but not from etcd (its lease stays
// alive) gives its actors up within about a lease: the others leave it
// out of the placement, it finds itself on the losing side, stops, cannot
// join again while cut off, and exits non-zero. Meanwhile the others
// serve: workloads applied during the partition reach their mounts.
func TestFleetMemberCutOffFromPeersGivesUp(t *testing.T) {
	r := startRigWith(t, 3, 2, func(c *distributed.FleetConfig) { c.JoinTimeout = 5 * time.Second })
	var docs []*messages.Document
	for _, n := range r.nodes {
		docs = append(docs, nodeDoc(n))
	}
	r.apply(docs...)
	r.place(map[string]cloud.NodeName{"w-1": "n1", "w-2": "n2", "w-3": "n1"})
	r.converge("before the partition", 60*time.Second)

	r.f.Partition(0, true)
	t.Cleanup(func() { r.f.Partition(0, false) })
	r.place(map[string]cloud.NodeName{"w-4": "n2", "w-1": "n2"})
	// The identities member 0 held move to the others once they leave it
	// out, about a lease after the cut; a detach prepared through a node
	// actor that was there waits out its PrepareTimeout (30s) first.
	r.converge("during the partition", 150*time.Second)
	ended, err := r.f.ControllerExit(0, 90*time.Second)
	if !ended {
		t.Fatal("the member cut off from its peers still runs")
	}
	if err == nil {
		t.Error("the member cut off from its peers exited 0, want non-zero")
	}
	if ids := r.memberIDs(); len(ids) != 2 {
		t.Errorf("members in etcd: %v, want the two that reach each other", ids)
	}
	r.place(map[string]cloud.NodeName{"w-5": "n1"})
	r.converge("after it gave up", 60*time.Second)
	for _, n := range r.nodeStatuses() {
		if !n.GetStatus().GetReady() {
			t.Errorf("node %s is NotReady", n.GetSpec().GetName())
		}
	}
}

// SIGTERM stops a member within 10 s whatever it is doing: here while it
// serves and is cut off from its peers (its graceful stop would wait on
// them), and the others take its actors over.
func TestFleetMemberStopsOnSIGTERMWithin10s(t *testing.T) {
	r := startRig(t, 3, 2)
	var docs []*messages.Document
	for _, n := range r.nodes {
		docs = append(docs, nodeDoc(n))
	}
	r.apply(docs...)
	r.place(map[string]cloud.NodeName{"w-1": "n1", "w-2": "n2"})
	r.converge("before", 60*time.Second)
	r.f.Partition(0, true)
	t.Cleanup(func() { r.f.Partition(0, false) })
	took, killed, err := r.f.TerminateController(0, 10*time.Second)
	if err != nil || killed {
		t.Fatalf("SIGTERM: the member needed SIGKILL after %v (%v)", took, err)
	}
	t.Logf("stopped %v after SIGTERM", took.Round(10*time.Millisecond))
	r.place(map[string]cloud.NodeName{"w-3": "n1"})
	r.converge("after it stopped", 90*time.Second)
}
