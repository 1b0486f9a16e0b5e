package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

type fixture struct {
	t     *testing.T
	store *store.Memory
	cloud *sim.Cloud
	ctl   *controller.Controller
	rec   *events.Recorder
	srv   *Server
	conn  *grpc.ClientConn
	token string
}

func newFixture(t *testing.T) *fixture {
	goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := &fixture{t: t, store: store.NewMemory(), cloud: sim.New(sim.Config{})}
	for _, n := range []cloud.NodeName{"n1", "n2"} {
		f.cloud.AddInstance(n)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	cfg := controller.DefaultConfig()
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	cfg.Log, cfg.Supervisor.Log = log, log
	f.rec = events.NewRecorder(50)
	f.ctl = controller.New(sys, cfg, f.cloud, f.store, f.rec)
	if err := f.ctl.Start(); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadOrCreateToken(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.token = tok
	f.srv, err = Serve("127.0.0.1:0", tok, f.ctl, f.cloud, false)
	if err != nil {
		t.Fatal(err)
	}
	f.conn, err = grpc.NewClient(f.srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.conn.Close()
		if err := f.srv.Stop(); err != nil {
			t.Error(err)
		}
		if err := f.ctl.Stop(5 * time.Second); err != nil {
			t.Error(err)
		}
		sys.Shutdown()
	})
	return f
}

func (f *fixture) client() messages.TetherClient { return messages.NewTetherClient(f.conn) }

func (f *fixture) ctx(token string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	f.t.Cleanup(cancel)
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

func node(n string) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: n}}}
}
func vol(v, mode string) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Volume{Volume: &messages.VolumeDoc{Name: v, AccessMode: mode}}}
}
func wl(w, n string, vols ...string) *messages.Document {
	d := &messages.WorkloadDoc{Name: w, Node: n}
	for _, v := range vols {
		d.Volumes = append(d.Volumes, &messages.WorkloadVolumeDoc{Name: v})
	}
	return &messages.Document{Doc: &messages.Document_Workload{Workload: d}}
}

func wantCode(t *testing.T, err error, code codes.Code, mention string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(err.Error(), mention) {
		t.Fatalf("err = %v, want %s mentioning %q", err, code, mention)
	}
}

// nothingStored fails if the store holds any volume or workload.
func (f *fixture) nothingStored() {
	f.t.Helper()
	vols, _ := f.store.Volumes()
	ws, _ := f.store.Workloads()
	if len(vols)+len(ws) != 0 {
		f.t.Fatalf("half-applied: volumes %v, workloads %v", vols, ws)
	}
}

func TestTokenRequired(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	req := &messages.ApplyRequest{Documents: []*messages.Document{vol("v1", "")}}
	_, err := c.Apply(f.ctx(""), req)
	wantCode(t, err, codes.Unauthenticated, "token")
	_, err = c.Apply(f.ctx(strings.Repeat("0", len(f.token))), req)
	wantCode(t, err, codes.Unauthenticated, "token")
	f.nothingStored()
	if _, err := c.Apply(f.ctx(f.token), req); err != nil {
		t.Fatal(err)
	}
}

func TestApplyIsAllOrNothing(t *testing.T) {
	f := newFixture(t)
	c, ctx := f.client(), f.ctx(f.token)
	bad := []struct {
		name    string
		docs    []*messages.Document
		mention string
	}{
		{"path-like name", []*messages.Document{vol("v1", ""), vol("../etc", "")}, "invalid volume ID"},
		{"separator in a workload name", []*messages.Document{node("n1"), wl("a/b", "n1")}, "invalid workload UID"},
		{"unknown node", []*messages.Document{vol("v1", ""), wl("w1", "nowhere", "v1")}, `unknown node "nowhere"`},
		{"unknown volume", []*messages.Document{node("n1"), wl("w1", "n1", "ghost")}, `unknown volume "ghost"`},
		{"duplicate names", []*messages.Document{vol("v1", ""), vol("v1", "ReadWriteMany")}, "document 2: volume/v1 is also document 1"},
		{"unknown access mode", []*messages.Document{vol("v1", "ReadSometimes")}, "unknown access mode"},
		{"empty document", []*messages.Document{vol("v1", ""), {}}, "empty document"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Apply(ctx, &messages.ApplyRequest{Documents: tt.docs})
			wantCode(t, err, codes.InvalidArgument, tt.mention)
			f.nothingStored()
		})
	}
	res, err := c.Apply(ctx, &messages.ApplyRequest{Documents: []*messages.Document{node("n1"), vol("v1", ""), wl("w1", "n1", "v1")}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Applied, ";") != "node/n1 created;volume/v1 created;workload/w1 created" {
		t.Fatalf("applied %v", res.Applied)
	}
}

func TestOversizedRequestRefused(t *testing.T) {
	f := newFixture(t)
	var docs []*messages.Document
	for i := 0; i < 20000; i++ {
		docs = append(docs, vol(strings.Repeat("v", 100), ""))
	}
	_, err := f.client().Apply(f.ctx(f.token), &messages.ApplyRequest{Documents: docs})
	wantCode(t, err, codes.ResourceExhausted, "larger than max")
	f.nothingStored()
}

// An exclusive volume claimed on two nodes is accepted; the second waits
// with a Multi-Attach event, as in Kubernetes.
func TestExclusiveVolumeOnTwoNodesAccepted(t *testing.T) {
	f := newFixture(t)
	c, ctx := f.client(), f.ctx(f.token)
	_, err := c.Apply(ctx, &messages.ApplyRequest{Documents: []*messages.Document{node("n1"), node("n2"), vol("v1", ""), wl("a", "n1", "v1"), wl("b", "n2", "v1")}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := c.Describe(ctx, &messages.DescribeRequest{Kind: "volume", Name: "v1"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Events {
			if e.Type == "Multi-Attach" && e.Node == "n2" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Multi-Attach event: %v", res.Events)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestGetDeleteAndNodeOperations(t *testing.T) {
	f := newFixture(t)
	c, ctx := f.client(), f.ctx(f.token)
	if _, err := c.Apply(ctx, &messages.ApplyRequest{Documents: []*messages.Document{node("n1"), vol("v1", "ReadWriteMany")}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Get(ctx, &messages.GetRequest{Kind: "volumes"})
	if err != nil || len(res.Volumes) != 1 || res.Volumes[0].Spec.AccessMode != "ReadWriteMany" {
		t.Fatalf("get volumes = %v, %v", res, err)
	}
	_, err = c.Get(ctx, &messages.GetRequest{Kind: "pods"})
	wantCode(t, err, codes.InvalidArgument, "unknown kind")
	_, err = c.Describe(ctx, &messages.DescribeRequest{Kind: "volume", Name: "nope"})
	wantCode(t, err, codes.NotFound, `volume "nope"`)
	if _, err := c.NodeOperation(ctx, &messages.NodeOperationRequest{Node: "n1", Operation: "terminate"}); err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Get(ctx, &messages.GetRequest{Kind: "node", Name: "n1"})
	if err != nil || len(nodes.Nodes) != 1 || nodes.Nodes[0].InstanceRunning {
		t.Fatalf("after terminate: %v %v", nodes, err)
	}
	_, err = c.NodeOperation(ctx, &messages.NodeOperationRequest{Node: "n1", Operation: "explode"})
	wantCode(t, err, codes.InvalidArgument, "unknown node operation")
	if _, err := c.Delete(ctx, &messages.DeleteRequest{Kind: "volume", Name: "v1"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Delete(ctx, &messages.DeleteRequest{Kind: "volume", Name: "v1"})
	wantCode(t, err, codes.NotFound, "v1")
}

func TestServeRefusesRemoteAddress(t *testing.T) {
	if _, err := Serve("0.0.0.0:0", "x", nil, nil, false); err == nil || !strings.Contains(err.Error(), "not a loopback") {
		t.Fatalf("err = %v", err)
	}
}

// TestDeleteMany: one Delete names many objects of a kind; they go
// together or not at all: one missing, empty or repeated name refuses
// the whole call, and nothing is deleted.
func TestDeleteMany(t *testing.T) {
	f := newFixture(t)
	c, ctx := f.client(), f.ctx(f.token)
	docs := []*messages.Document{node("n1")}
	for i := range 5 {
		docs = append(docs, vol(fmt.Sprintf("v%d", i), "ReadWriteOnce"))
	}
	if _, err := c.Apply(ctx, &messages.ApplyRequest{Documents: docs}); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		res, err := c.Get(ctx, &messages.GetRequest{Kind: "volumes"})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Volumes)
	}
	for _, bad := range []struct {
		req  *messages.DeleteRequest
		code codes.Code
		says string
	}{
		{&messages.DeleteRequest{Kind: "volume", Name: "v0", Names: []string{"v1", "nope"}}, codes.NotFound, `"nope"`},
		{&messages.DeleteRequest{Kind: "volume", Name: "v0", Names: []string{"v1", "v0"}}, codes.InvalidArgument, `"v0" named twice`},
		{&messages.DeleteRequest{Kind: "volume", Name: "v0", Names: []string{""}}, codes.InvalidArgument, "name 2 is empty"},
	} {
		_, err := c.Delete(ctx, bad.req)
		wantCode(t, err, bad.code, bad.says)
		if n := count(); n != 5 {
			t.Fatalf("after a refused delete (%v): %d volumes, want 5 (nothing deleted)", bad.req, n)
		}
	}
	if _, err := c.Delete(ctx, &messages.DeleteRequest{Kind: "volume", Name: "v0", Names: []string{"v1", "v2", "v3"}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Get(ctx, &messages.GetRequest{Kind: "volumes"})
	if err != nil || len(res.Volumes) != 1 || res.Volumes[0].Spec.Name != "v4" {
		t.Fatalf("after deleting v0-v3: %v, %v; want v4 alone", res.GetVolumes(), err)
	}
}
