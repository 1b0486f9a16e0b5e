package distributed

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/bootstrap/process/remoting/grpcstacks"
)

// A ping reaches the member itself at its address; another process
// answering there (a member restarted on the same address: the entry is
// its predecessor's) is no round trip with that member, though answer
// names who answered; an address nobody answers at is unreachable, within
// the ping's bound.
func TestPingAndAnswer(t *testing.T) {
	grpcstacks.WaitQuiet(t, 20*time.Second) // remote.Start writes gRPC's global logger
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	rc, err := RemoteConfig{}.build(log)
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	r := remote.NewRemote(sys, rc)
	r.Start()
	t.Cleanup(func() { r.Shutdown(true) })
	if err := spawnPeerActor(sys); err != nil {
		t.Fatal(err)
	}
	host, port := hostPort(t, sys.Address())
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadHost, deadPort := hostPort(t, closed.Addr().String())
	if err := closed.Close(); err != nil { // nobody listens there any more
		t.Fatal(err)
	}
	p := pinger{sys: sys, timeout: 2 * time.Second}
	for _, tc := range []struct {
		name     string
		m        *cluster.Member
		answerer string // "": no answer
		pingErr  string // "": a round trip
	}{
		{"the member itself", &cluster.Member{Id: sys.ID, Host: host, Port: port}, sys.ID, ""},
		{"a predecessor at the same address", &cluster.Member{Id: "killed-member", Host: host, Port: port}, sys.ID, "answered as member " + sys.ID},
		{"nobody listening", &cluster.Member{Id: "gone", Host: deadHost, Port: deadPort}, "", "no answer from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := p.answer(tc.m)
			if id != tc.answerer || (err == nil) != (tc.answerer != "") {
				t.Fatalf("answer = %q, %v; want %q", id, err, tc.answerer)
			}
			err = p.ping(tc.m)
			if (err == nil) != (tc.pingErr == "") || (err != nil && !strings.Contains(err.Error(), tc.pingErr)) {
				t.Fatalf("ping = %v, want %q", err, tc.pingErr)
			}
		})
	}
}

func hostPort(t *testing.T, addr string) (string, int32) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, int32(n)
}
