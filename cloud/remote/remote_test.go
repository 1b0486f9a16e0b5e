package remote

import (
	"context"
	"errors"
	"net"
	"reflect"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/cloud/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a sim cloud served on loopback and a client of it; both stop in
// t.Cleanup.
type rig struct {
	sim  *sim.Cloud
	srv  *Server
	cl   *Client
	addr string // the server's
}

func newRig(t *testing.T, cfg sim.Config) *rig {
	t.Helper()
	c := sim.New(cfg)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(lis, c)
	t.Cleanup(srv.Stop)
	cl, err := Dial(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return &rig{sim: c, srv: srv, cl: cl, addr: lis.Addr().String()}
}

func TestMethodsMatchSim(t *testing.T) {
	r := newRig(t, sim.Config{BatchSize: 7})
	ctx := t.Context()
	i1, i2, gone := r.sim.AddInstance("n1"), r.sim.AddInstance("n2"), r.sim.AddInstance("n3")
	r.sim.CreateVolume("a", cloud.Exclusive)
	r.sim.CreateVolume("b", cloud.MultiNode)
	if err := r.sim.Delete(gone); err != nil {
		t.Fatal(err)
	}

	if got := r.cl.BatchSize(); got != 7 {
		t.Errorf("BatchSize = %d, want 7", got)
	}
	id, err := r.cl.InstanceID(ctx, "n2")
	if want, _ := r.sim.InstanceID(ctx, "n2"); err != nil || id != want {
		t.Errorf("InstanceID(n2) = %q, %v; want %q", id, err, want)
	}
	for _, a := range []struct {
		vol  cloud.VolumeID
		inst cloud.InstanceID
	}{{"a", i1}, {"b", i1}, {"b", i2}} {
		dev, err := r.cl.Attach(ctx, a.vol, a.inst)
		if want, _ := r.sim.Attach(ctx, a.vol, a.inst); err != nil || dev != want {
			t.Errorf("Attach(%s, %s) = %q, %v; the sim says %q", a.vol, a.inst, dev, err, want)
		}
	}
	if err := r.cl.Detach(ctx, "b", i2); err != nil {
		t.Errorf("Detach: %v", err)
	}
	if err := r.cl.Detach(ctx, "b", i2); err != nil {
		t.Errorf("Detach again (idempotent): %v", err)
	}

	query := map[cloud.InstanceID][]cloud.VolumeID{i1: {"a", "b", "c"}, i2: {"b"}, gone: {"a"}, "i-unknown": nil}
	got, err := r.cl.VolumesAreAttached(ctx, query)
	want, _ := r.sim.VolumesAreAttached(ctx, query)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("VolumesAreAttached = %v, %v; the sim says %v", got, err, want)
	}
	insts := []cloud.InstanceID{i1, i2, gone}
	devs, err := r.cl.InstanceVolumes(ctx, insts)
	wantDevs, _ := r.sim.InstanceVolumes(ctx, insts)
	if err != nil || !reflect.DeepEqual(devs, wantDevs) {
		t.Errorf("InstanceVolumes = %v, %v; the sim says %v", devs, err, wantDevs)
	}
	if _, ok := devs[gone]; ok {
		t.Errorf("InstanceVolumes: deleted instance %s present: %v", gone, devs)
	}
	if m, ok := devs[i2]; !ok || len(m) != 0 {
		t.Errorf("InstanceVolumes[%s] = %v, %v; want present and empty", i2, m, ok)
	}
	nodes := []cloud.NodeName{"n1", "n2", "n3", "n-unknown"}
	ids, err := r.cl.InstanceIDs(ctx, nodes)
	wantIDs, _ := r.sim.InstanceIDs(ctx, nodes)
	if err != nil || !reflect.DeepEqual(ids, wantIDs) || len(ids) != 2 {
		t.Errorf("InstanceIDs = %v, %v; the sim says %v (n1 and n2; n3's instance was deleted)", ids, err, wantIDs)
	}
	if _, err := r.cl.InstanceIDs(ctx, []cloud.NodeName{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"}); cloud.Classify(err) != cloud.KindTerminal {
		t.Errorf("InstanceIDs of more nodes than the batch: %v, want terminal", err)
	}
}

// nodeByNode is a provider that resolves node by node only.
type nodeByNode struct{ cloud.Provider }

// TestInstanceIDsNotServed: a cloud service whose provider resolves node
// by node answers Unimplemented, which the client reports as
// errors.ErrUnsupported (the controller then asks node by node).
func TestInstanceIDsNotServed(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(lis, nodeByNode{sim.New(sim.Config{})})
	t.Cleanup(srv.Stop)
	cl, err := Dial(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	if _, err := cl.InstanceIDs(t.Context(), []cloud.NodeName{"n1"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("InstanceIDs from a provider without it: %v, want errors.ErrUnsupported", err)
	}
}

// TestInjectedErrorsRoundTrip: every kind the sim injects comes back with
// the provider's text, its sentinel and its kind.
func TestInjectedErrorsRoundTrip(t *testing.T) {
	r := newRig(t, sim.Config{})
	ctx := t.Context()
	inst := r.sim.AddInstance("n1")
	r.sim.CreateVolume("v", cloud.Exclusive)
	kinds := []cloud.Kind{cloud.KindNone, cloud.KindRetryable, cloud.KindThrottled, cloud.KindTerminal,
		cloud.KindAttachedElsewhere, cloud.KindLimitReached, cloud.KindNotFound}
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			r.sim.FailNext(sim.MethodAttach, 1, k)
			_, direct := r.sim.Attach(ctx, "v", inst)
			r.sim.FailNext(sim.MethodAttach, 1, k)
			_, err := r.cl.Attach(ctx, "v", inst)
			if err == nil || err.Error() != direct.Error() {
				t.Fatalf("err = %v, want the sim's text %q", err, direct)
			}
			want := cloud.Classify(direct) // KindNone injects an unclassified (retryable) error
			if got := cloud.Classify(err); got != want {
				t.Errorf("Classify = %v, want %v", got, want)
			}
			if !errors.Is(err, want.Sentinel()) {
				t.Errorf("errors.Is(%v, %v) = false", err, want.Sentinel())
			}
			if errors.Is(err, ErrUnknownOutcome) || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a provider's answer reported as an unknown outcome: %v", err)
			}
		})
	}
	if len(r.sim.Attachments()) != 0 {
		t.Errorf("failed attaches took effect: %v", r.sim.Attachments())
	}
}

// TestNaturalErrors: errors the sim's own state produces.
func TestNaturalErrors(t *testing.T) {
	r := newRig(t, sim.Config{BatchSize: 2})
	ctx := t.Context()
	i1, i2 := r.sim.AddInstance("n1"), r.sim.AddInstance("n2")
	r.sim.CreateVolume("x", cloud.Exclusive)
	r.sim.CreateVolume("y", cloud.Exclusive)
	if _, err := r.cl.Attach(ctx, "x", i1); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.SetAttachLimit(i2, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"attached elsewhere", func() error { _, err := r.cl.Attach(ctx, "x", i2); return err }, cloud.ErrAttachedElsewhere},
		{"limit reached", func() error { _, err := r.cl.Attach(ctx, "y", i2); return err }, cloud.ErrLimitReached},
		{"unknown node", func() error { _, err := r.cl.InstanceID(ctx, "n9"); return err }, cloud.ErrNotFound},
		{"unknown instance", func() error { return r.cl.Detach(ctx, "x", "i-unknown") }, cloud.ErrNotFound},
		{"unknown volume", func() error { _, err := r.cl.Attach(ctx, "z", i1); return err }, cloud.ErrNotFound},
		{"over the batch size", func() error {
			_, err := r.cl.InstanceVolumes(ctx, []cloud.InstanceID{i1, i2, "i-3"})
			return err
		}, cloud.ErrTerminal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want one wrapping %v", err, tt.want)
			}
		})
	}
}

// TestDoneContextSendsNothing: no method sends a call whose ctx is done.
func TestDoneContextSendsNothing(t *testing.T) {
	r := newRig(t, sim.Config{})
	inst := r.sim.AddInstance("n1")
	r.sim.CreateVolume("v", cloud.Exclusive)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	before := r.sim.Calls()
	calls := map[string]func() error{
		"InstanceID": func() error { _, err := r.cl.InstanceID(ctx, "n1"); return err },
		"Attach":     func() error { _, err := r.cl.Attach(ctx, "v", inst); return err },
		"Detach":     func() error { return r.cl.Detach(ctx, "v", inst) },
		"VolumesAreAttached": func() error {
			_, err := r.cl.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{inst: {"v"}})
			return err
		},
		"InstanceVolumes": func() error { _, err := r.cl.InstanceVolumes(ctx, []cloud.InstanceID{inst}); return err },
	}
	for name, call := range calls {
		if err := call(); err != context.Canceled {
			t.Errorf("%s: err = %v, want context.Canceled", name, err)
		}
	}
	if after := r.sim.Calls(); !reflect.DeepEqual(after, before) {
		t.Errorf("calls sent: before %+v, after %+v", before, after)
	}
}

// TestDeadlineShorterThanLatency: the deadline crosses the wire, so the
// sim drops an attach that would land after it.
func TestDeadlineShorterThanLatency(t *testing.T) {
	r := newRig(t, sim.Config{Latency: 200 * time.Millisecond})
	inst := r.sim.AddInstance("n1")
	r.sim.CreateVolume("late", cloud.Exclusive)
	r.sim.CreateVolume("marker", cloud.Exclusive)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := r.cl.Attach(ctx, "late", inst)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one wrapping context.DeadlineExceeded", err)
	}
	if cloud.Classify(err) != cloud.KindRetryable {
		t.Errorf("Classify = %v, want retryable", cloud.Classify(err))
	}
	// The marker is sent after "late" and has the same latency: once it
	// has landed, "late" would have landed too, had it been carried out.
	if _, err := r.cl.Attach(t.Context(), "marker", inst); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, func() bool { return len(r.sim.Attachments()["marker"]) == 1 }, "the marker attached")
	if got := r.sim.Attachments()["late"]; len(got) != 0 {
		t.Errorf("attach past its deadline carried out: late on %v", got)
	}
}

// TestServerStoppedMidCall: a call in flight when the server stops has an
// unknown outcome, reported as a context error; the sim carries it out.
func TestServerStoppedMidCall(t *testing.T) {
	r := newRig(t, sim.Config{Latency: 300 * time.Millisecond})
	inst := r.sim.AddInstance("n1")
	r.sim.CreateVolume("v", cloud.Exclusive)
	errc := make(chan error, 1)
	go func() {
		_, err := r.cl.Attach(t.Context(), "v", inst)
		errc <- err
	}()
	testkit.Eventually(t, 5*time.Second, func() bool { return r.sim.Calls().Calls[sim.MethodAttach] == 1 }, "the attach reached the sim")
	r.srv.Stop()
	var err error
	select {
	case err = <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("the client still waits after the server stopped")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("err = %v, want one wrapping ErrUnknownOutcome and context.DeadlineExceeded", err)
	}
	testkit.Eventually(t, 5*time.Second, func() bool {
		return slices.Equal(r.sim.Attachments()["v"], []cloud.InstanceID{inst})
	}, "the sent attach carried out")
}

// TestCallerCancelsMidCall: the caller's own cancellation is its error.
func TestCallerCancelsMidCall(t *testing.T) {
	r := newRig(t, sim.Config{Latency: 300 * time.Millisecond})
	inst := r.sim.AddInstance("n1")
	r.sim.CreateVolume("v", cloud.Exclusive)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := r.cl.Attach(ctx, "v", inst)
		errc <- err
	}()
	testkit.Eventually(t, 5*time.Second, func() bool { return r.sim.Calls().Calls[sim.MethodAttach] == 1 }, "the attach reached the sim")
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want one wrapping context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client still waits after its ctx was cancelled")
	}
	// The call once sent goes on (cancelling only stops the wait).
	testkit.Eventually(t, 5*time.Second, func() bool { return len(r.sim.Attachments()["v"]) == 1 }, "the sent attach carried out")
}
