package remoting

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const loopback = "127.0.0.1:0"

func TestHeartbeatOverLoopback(t *testing.T) {
	t.Parallel()
	a := spawnNode(t, Config{Addr: loopback})
	b := spawnNode(t, Config{Addr: loopback})
	a.ping(b, "a")
	b.ping(a, "b")
}

func TestHeartbeatOverMutualTLS(t *testing.T) {
	t.Parallel()
	files := tlsFiles(certSet(t, "127.0.0.1"))
	a := spawnNode(t, Config{Addr: loopback, TLS: files})
	b := spawnNode(t, Config{Addr: loopback, TLS: files})
	a.ping(b, "a")
	b.ping(a, "b")
	for _, p := range []*proc{a, b} {
		if e := p.logs("refused"); len(e) > 0 {
			t.Fatalf("handshakes refused: %v", e)
		}
	}
}

// A peer is refused unless it presents a certificate from the CA: its
// handshake fails (logged by the listener) and its message never
// arrives. Each listener requires that certificate, so the heartbeats of
// TestHeartbeatOverMutualTLS show that the dialing side presents it.
func TestTLSRefusesPeers(t *testing.T) {
	t.Parallel()
	files := tlsFiles(certSet(t, "127.0.0.1"))
	for name, bad := range map[string]nodeSpec{
		"no client certificate": {Config: Config{TLS: TLSFiles{CA: files.CA}}, NoClientCert: true},
		"another CA":            {Config: Config{Addr: loopback, TLS: tlsFiles(certSet(t, "127.0.0.1"))}},
		"plain text":            {Config: Config{Addr: loopback}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := spawnNode(t, Config{Addr: loopback, TLS: files})
			bad.MaxRetryCount = 1 // it gives up after one refusal (and remote's 2 s pause)
			p := spawn(t, bad)
			if r := p.do(command{Op: "ping", To: b.addr, Name: "bad"}); r.Err == "" {
				t.Fatalf("the refused peer got an answer: %q", r.Answer)
			}
			if len(b.logs("refused a peer's TLS handshake")) == 0 {
				t.Fatal("the refused handshake was not logged")
			}
			// The bad peer has given up: a good peer's message is the
			// first to arrive.
			good := spawnNode(t, Config{Addr: loopback, TLS: files})
			good.ping(b, "good")
			if got := b.received(); !slices.Equal(got, []string{"hb:good"}) {
				t.Fatalf("receiver got %v, want only the good heartbeat", got)
			}
		})
	}
}

// Unknown types and bytes that do not decode are dropped and logged; the
// stream they came on goes on, and the next message on it arrives.
func TestRejectsUnknownAndMalformed(t *testing.T) {
	t.Parallel()
	a := spawnNode(t, Config{Addr: loopback})
	b := spawnNode(t, Config{Addr: loopback})
	a.ping(b, "first")
	a.do(command{Op: "send", To: b.addr, Name: "unknown"})
	a.do(command{Op: "send", To: b.addr, Name: "malformed"})
	a.ping(b, "after")

	rejected := b.logs("rejected a message")
	if len(rejected) != 2 {
		t.Fatalf("%d rejections logged, want 2: %v", len(rejected), rejected)
	}
	for i, want := range []struct{ typ, reason, sender string }{
		{"tether.messages.NoSuchMessage", reasonUnknown, ""},
		{"tether.messages.Heartbeat", reasonMalformed, a.addr + "/echo"},
	} {
		d := rejected[i]
		if d["type"] != want.typ || d["reason"] != want.reason || d["sender"] != want.sender || d["level"] != "warning" {
			t.Errorf("rejection %d: %v, want type %s, reason %q, sender %q", i, d, want.typ, want.reason, want.sender)
		}
		if d["peer_address"] != a.addr || !strings.HasPrefix(d["peer"].(string), "127.0.0.1:") {
			t.Errorf("rejection %d does not name the peer: %v", i, d)
		}
	}
	if _, ok := rejected[1]["error"]; !ok {
		t.Error("the malformed message's decoding error is not logged")
	}
	if ev := a.do(command{Op: "events"}); ev.Connected != 1 || ev.Terminated != 0 {
		t.Fatalf("sender connected %d times and lost %d endpoints, want one connection throughout", ev.Connected, ev.Terminated)
	}
	if got := b.received(); !slices.Equal(got, []string{"hb:first", "hb:after"}) {
		t.Fatalf("receiver's actor got %v, want the two heartbeats only", got)
	}
}

// By default only tether's and Proto.Actor's packages are accepted.
func TestAcceptList(t *testing.T) {
	t.Parallel()
	a := spawnNode(t, Config{Addr: loopback})
	strict := spawnNode(t, Config{Addr: loopback})
	open := spawnNode(t, Config{Addr: loopback, AcceptAnyType: true})
	for _, b := range []*proc{strict, open} {
		a.do(command{Op: "send", To: b.addr, Name: "outsider"})
		a.ping(b, "after")
	}
	if got := strict.received(); !slices.Equal(got, []string{"hb:after"}) {
		t.Errorf("strict receiver got %v, want the heartbeat only", got)
	}
	if e := strict.logs("rejected"); len(e) != 1 || e[0]["reason"] != reasonRefused || e[0]["type"] != "google.protobuf.StringValue" {
		t.Errorf("strict receiver logged %v", e)
	}
	if got := open.received(); !slices.Equal(got, []string{"google.protobuf.StringValue", "hb:after"}) {
		t.Errorf("open receiver got %v, want the StringValue and the heartbeat", got)
	}
}

// Proto.Actor's own system messages pass, over mutual TLS: a remote watch
// (actor.Watch one way, actor.Terminated back).
func TestRemoteWatch(t *testing.T) {
	t.Parallel()
	files := tlsFiles(certSet(t, "127.0.0.1"))
	a := spawnNode(t, Config{Addr: loopback, TLS: files})
	b := spawnNode(t, Config{Addr: loopback, TLS: files})
	if r := a.do(command{Op: "watch", To: b.addr}); r.Err != "" || r.Answer != "victim" {
		t.Fatalf("watch: terminated %q, error %q", r.Answer, r.Err)
	}
	for _, p := range []*proc{a, b} {
		if e := p.logs("rejected"); len(e) > 0 {
			t.Fatalf("system messages rejected: %v", e)
		}
	}
}

// The unary methods of Proto.Actor's service panic; they are refused, and
// the process serves on.
func TestUnaryCallsRefused(t *testing.T) {
	t.Parallel()
	a := spawnNode(t, Config{Addr: loopback})
	b := spawnNode(t, Config{Addr: loopback})
	conn, err := grpc.NewClient(b.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c := remote.NewRemotingClient(conn)
	if _, err := c.ListProcesses(ctx, &remote.ListProcessesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("ListProcesses: %v, want Unimplemented", err)
	}
	if _, err := c.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("GetProcessDiagnostics: %v, want Unimplemented", err)
	}
	a.ping(b, "after")
	if len(b.logs("refused an unimplemented call")) != 2 {
		t.Error("the refused calls were not logged")
	}
}

// A peer nobody answers at: Proto.Actor's endpoint writer dials it
// MaxRetryCount times and gives up, and no connection of those tries is
// left reconnecting in the background (the pinned Proto.Actor keeps only
// its last connection to close; closeFailedConn closes the others).
func TestFailedDialsLeaveNoConnection(t *testing.T) {
	t.Parallel()
	dead, err := net.Listen("tcp", loopback)
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	if err := dead.Close(); err != nil { // nobody listens there any more
		t.Fatal(err)
	}
	a := spawn(t, nodeSpec{Config: Config{Addr: loopback}, MaxRetryCount: 3})
	if r := a.do(command{Op: "ping", To: addr, Name: "nobody"}); r.Err == "" {
		t.Fatalf("a dead address answered: %q", r.Answer)
	}
	// The writer gives up after its tries (2 s apart) and says so.
	deadline := time.Now().Add(30 * time.Second)
	for a.do(command{Op: "events"}).Terminated == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the endpoint to a dead address never terminated")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var n int
	for {
		if n = a.do(command{Op: "dialing"}).Dialing; n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d gRPC connections to the dead address still try to connect after the endpoint gave up", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
