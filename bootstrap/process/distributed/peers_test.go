package distributed_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/process/distributed"
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
	r.serving("before the bad member")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, done, said := r.unreachableMember(8 * time.Second)

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
			t.Fatalf("the unreachable member did not give up within its join bound; it said:\n%s", said())
		case <-time.After(100 * time.Millisecond): // polling pace
		}
	}
	var exit *exec.ExitError
	if !errors.As(ended, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the unreachable member ended with %v, want a non-zero exit; it said:\n%s", ended, said())
	}
	if s := said(); !strings.Contains(s, "cannot be reached over remote") || !strings.Contains(s, "--remote-advertise") {
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
	waiting, exited, said := r.unreachableMember(5 * time.Minute)
	r.eventually("the member waits for its peers", 30*time.Second, func() bool { return strings.Contains(said(), "not joining yet") })
	if err := waiting.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("SIGTERM did not stop a member waiting for its peers within 10s; it said:\n%s", said())
	}
}

// serving declares the rig's nodes, places w-1 on n1 and w-2 on n2, and
// waits for them to converge.
func (r *rig) serving(what string) {
	r.t.Helper()
	var docs []*messages.Document
	for _, n := range r.nodes {
		docs = append(docs, nodeDoc(n))
	}
	r.apply(docs...)
	r.place(map[string]cloud.NodeName{"w-1": "n1", "w-2": "n2"})
	r.converge(what, 60*time.Second)
}

// unreachableMember starts a controller member of the rig's cluster that
// no peer can answer: it advertises an address nobody listens on. It
// tries to join for join; exited gets its end, said reads what it printed
// so far (a file: the process writes while the test reads). It is killed
// at cleanup if still running.
func (r *rig) unreachableMember(join time.Duration) (cmd *exec.Cmd, exited <-chan error, said func() string) {
	r.t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close() // a port of its own; nobody listens on the advertised one
	log := filepath.Join(r.t.TempDir(), "member.log")
	f, err := os.Create(log)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	cmd = exec.Command(binary, "controller", "--etcd", strings.Join(r.f.Etcd.Endpoints(), ","), "--cloud", r.f.CloudAddr(),
		"--remote-addr", addr, "--remote-advertise", "127.0.0.1:1", "--api-addr", "", "--join-timeout", join.String())
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	done, over := make(chan error, 1), make(chan struct{})
	go func() {
		done <- cmd.Wait()
		close(over)
	}()
	r.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-over
	})
	return cmd, done, func() string {
		b, _ := os.ReadFile(log)
		return string(b)
	}
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
	r.serving("before the partition")
	r.place(map[string]cloud.NodeName{"w-3": "n1"})
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
	r.serving("before")
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
