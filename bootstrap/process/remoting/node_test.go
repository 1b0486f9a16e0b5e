package remoting

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/bootstrap/process/remoting/grpcstacks"
	"github.com/tether/tether/messages"
)

// Each actor system of these tests runs in a process of its own (this
// test binary, run with nodeEnv set): remote.Start sets gRPC's global
// logger without synchronization, which the race detector reports as
// soon as a second remote starts in a process where gRPC already runs.
// A node takes commands on stdin and answers each with one JSON line on
// stdout.
const nodeEnv = "REMOTING_TEST_NODE"

func TestMain(m *testing.M) {
	if spec := os.Getenv(nodeEnv); spec != "" {
		os.Exit(runNode(spec))
	}
	if files := os.Getenv(clusterEnv); files != "" {
		os.Exit(runCluster(files))
	}
	os.Exit(m.Run())
}

// nodeSpec configures a node process.
type nodeSpec struct {
	Config Config
	// NoClientCert dials over TLS, trusting Config.TLS.CA, without a
	// certificate of its own (and listens in plain text).
	NoClientCert bool
	// MaxRetryCount, if set, bounds remote's connection attempts.
	MaxRetryCount int
}

// command is what a node is told to do. To is the address of the peer
// node it concerns.
type command struct {
	Op   string // ping, send, watch, received, logs, events, dialing, quit
	To   string
	Name string // ping: the heartbeat's node; send: what to send (see send)
}

// reply answers one command (the first, unasked, carries Addr).
type reply struct {
	Addr       string
	Err        string
	Answer     string           // ping: the answer's node; watch: who terminated
	Received   []string         // "hb:<node>" for a heartbeat, else the type name
	Logs       []map[string]any // entries: "msg" and the fields, as strings
	Connected  int32            // remote.EndpointConnectedEvents seen
	Terminated int32            // remote.EndpointTerminatedEvents seen
	Dialing    int              // dialing: gRPC client connections of the process trying to connect
}

// node is one actor system with remote started, an "echo" actor that
// keeps every protobuf message it gets and answers a Heartbeat, and a
// "victim" actor that stops on a Heartbeat.
type node struct {
	sys                   *actor.ActorSystem
	echo                  *actor.PID
	got                   chan proto.Message
	log                   *logtest.Hook
	connected, terminated atomic.Int32
}

func runNode(spec string) int {
	var s nodeSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, hook := logtest.NewNullLogger()
	l.SetOutput(io.Discard)
	s.Config.Log = l
	rc, err := nodeConfig(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	n := &node{sys: actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory())), got: make(chan proto.Message, 64), log: hook}
	r := remote.NewRemote(n.sys, rc)
	r.Start()
	n.sys.EventStream.Subscribe(n.onEvent)
	n.echo, _ = n.sys.Root.SpawnNamed(actor.PropsFromFunc(n.receive), "echo")
	_, _ = n.sys.Root.SpawnNamed(actor.PropsFromFunc(victim), "victim")

	out := json.NewEncoder(os.Stdout)
	_ = out.Encode(reply{Addr: n.sys.Address()})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		_ = out.Encode(n.do(c))
		if c.Op == "quit" {
			break
		}
	}
	// Stop serving and the system; the process ends the rest (a graceful
	// remote shutdown races in Proto.Actor's endpoint manager).
	r.Shutdown(false)
	n.sys.Shutdown()
	return 0
}

func nodeConfig(s nodeSpec) (*remote.Config, error) {
	var rc *remote.Config
	if s.NoClientCert {
		tc, err := certs.ClientConfig(s.Config.TLS.CA, "", "", "")
		if err != nil {
			return nil, err
		}
		rc = remote.Configure("127.0.0.1", 0, remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(tc))))
	} else {
		var err error
		if rc, err = Configure(s.Config); err != nil {
			return nil, err
		}
	}
	if s.MaxRetryCount > 0 {
		rc.MaxRetryCount = s.MaxRetryCount
	}
	return rc, nil
}

func (n *node) onEvent(ev any) {
	switch ev.(type) {
	case *remote.EndpointConnectedEvent:
		n.connected.Add(1)
	case *remote.EndpointTerminatedEvent:
		n.terminated.Add(1)
	}
}

func (n *node) receive(ctx actor.Context) {
	m, ok := ctx.Message().(proto.Message)
	if !ok {
		return
	}
	n.got <- m
	if hb, ok := m.(*messages.Heartbeat); ok && ctx.Sender() != nil {
		ctx.Respond(&messages.Heartbeat{Node: "echo " + hb.Node})
	}
}

func victim(ctx actor.Context) {
	if _, ok := ctx.Message().(*messages.Heartbeat); ok {
		ctx.Stop(ctx.Self())
	}
}

func (n *node) do(c command) reply {
	switch c.Op {
	case "ping":
		res, err := n.sys.Root.RequestFuture(actor.NewPID(c.To, "echo"), &messages.Heartbeat{Node: c.Name}, wait).Result()
		if err != nil {
			return reply{Err: err.Error()}
		}
		if hb, ok := res.(*messages.Heartbeat); ok {
			return reply{Answer: hb.Node}
		}
		return reply{Err: fmt.Sprintf("answered with %T", res)}
	case "send":
		return n.send(c)
	case "watch":
		return n.watch(c.To)
	case "received":
		return reply{Received: n.received()}
	case "logs":
		return reply{Logs: logs(n.log)}
	case "events":
		return reply{Connected: n.connected.Load(), Terminated: n.terminated.Load()}
	case "dialing":
		return reply{Dialing: grpcstacks.Dialing()}
	case "quit":
		return reply{}
	}
	return reply{Err: "unknown op " + c.Op}
}

// send sends c.To's echo: "unknown", a type this binary does not know;
// "malformed", bytes that do not decode as the Heartbeat they claim to
// be (sent with the echo as sender); "outsider", a linked type outside
// tether's and Proto.Actor's packages.
func (n *node) send(c command) reply {
	to := actor.NewPID(c.To, "echo")
	switch c.Name {
	case "unknown":
		n.sys.Root.Send(to, madeUp("tether.messages", "NoSuchMessage", []byte("x")))
	case "malformed":
		n.sys.Root.RequestWithCustomSender(to, madeUp("tether.messages", "Heartbeat", []byte{0xff, 0xfe}), n.echo)
	case "outsider":
		n.sys.Root.Send(to, wrapperspb.String("outsider"))
	default:
		return reply{Err: "unknown message " + c.Name}
	}
	return reply{}
}

// watch watches the victim at addr, sends it a Heartbeat (which stops
// it) and waits for its Terminated.
func (n *node) watch(addr string) reply {
	target := actor.NewPID(addr, "victim")
	done := make(chan *actor.Terminated, 1)
	pid := n.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			ctx.Watch(target)
			ctx.Send(target, &messages.Heartbeat{Node: "stop"})
		case *actor.Terminated:
			done <- m
		}
	}))
	defer n.sys.Root.Stop(pid)
	select {
	case m := <-done:
		return reply{Answer: m.Who.GetId()}
	case <-time.After(wait):
		return reply{Err: "no Terminated"}
	}
}

func (n *node) received() []string {
	var out []string
	for {
		select {
		case m := <-n.got:
			if hb, ok := m.(*messages.Heartbeat); ok {
				out = append(out, "hb:"+hb.Node)
			} else {
				out = append(out, string(proto.MessageName(m)))
			}
		default:
			return out
		}
	}
}

func logs(h *logtest.Hook) []map[string]any {
	var out []map[string]any
	for _, e := range h.AllEntries() {
		m := map[string]any{"msg": e.Message, "level": e.Level.String()}
		for k, v := range e.Data {
			m[k] = fmt.Sprint(v)
		}
		out = append(out, m)
	}
	return out
}
