package remoting

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/messages"
)

// Messages per second between two processes over loopback: one process
// sends a burst of Heartbeats (what node agents send controller members
// most, each with its sender, as an agent's SendFrom does) to a counting
// actor in another, which acknowledges when it has counted them all.
//
//	go test -run '^$' -bench RemoteThroughput -benchtime 1x ./bootstrap/process/remoting/
//
// Variants, each a sub-benchmark whose msgs/s is its own rate:
//
//   - bare: remote.Configure defaults (plain gRPC, no screen), as a
//     Proto.Actor program would run.
//   - tether: remoting.Configure on loopback, plain text: the screen
//     decodes every envelope once more before Proto.Actor does.
//   - tether_tls: remoting.Configure with mutual TLS (tether certs).
//
// Two processes on two cores vary by tens of percent from burst to burst,
// so a ratio of rates measured at different moments means little. Each
// tether variant therefore runs a bare pair of processes next to its own
// and alternates bursts, b.N rounds of one each (bare first in even
// rounds, last in odd ones): ratio_to_bare is the variant's rate over the
// bare pair's in those same rounds (the bare bursts are outside the
// timer), and bare_msgs/s that bare rate.
func BenchmarkRemoteThroughput(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "certs")
	if _, err := certs.WriteSet(dir, certs.SetOptions{Hosts: []string{"127.0.0.1"}, ValidFor: 24 * time.Hour, Now: time.Now()}); err != nil {
		b.Fatal(err)
	}
	for _, v := range []partySpec{
		{Variant: "bare"},
		{Variant: "tether"},
		{Variant: "tether_tls", TLS: tlsFiles(dir)},
	} {
		b.Run(v.Variant, func(b *testing.B) { throughput(b, v) })
	}
}

// throughput measures v, and bare next to it unless v is bare.
func throughput(b *testing.B, v partySpec) {
	pair := startPair(b, v)
	var bare *partyPair
	if v.Variant != "bare" {
		bare = startPair(b, partySpec{Variant: "bare"})
		bare.deliver(burst) // warm: connections, heaps, GC pacing
	}
	pair.deliver(burst)
	var bareTime time.Duration
	timeBare := func() {
		if bare != nil {
			t0 := time.Now()
			bare.deliver(burst)
			bareTime += time.Since(t0)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if i%2 == 0 {
			timeBare()
		}
		pair.expect(burst)
		b.StartTimer()
		pair.send(burst)
		b.StopTimer()
		if i%2 == 1 {
			timeBare()
		}
	}
	msgs := float64(burst) * float64(b.N)
	rate := msgs / b.Elapsed().Seconds()
	b.ReportMetric(rate, "msgs/s")
	if bare != nil {
		bareRate := msgs / bareTime.Seconds()
		b.ReportMetric(bareRate, "bare_msgs/s")
		b.ReportMetric(rate/bareRate, "ratio_to_bare")
	}
}

// burst is the number of messages of one round: long enough that the
// acknowledgement and the pipes' round trips are noise, short enough
// that one round of all variants takes seconds.
const burst = 200_000

// partyPair is a sender and a receiver configured alike.
type partyPair struct {
	tb               testing.TB
	variant          string
	sender, receiver *partyProc
}

func startPair(tb testing.TB, s partySpec) *partyPair {
	tb.Helper()
	return &partyPair{tb: tb, variant: s.Variant, receiver: startParty(tb, s), sender: startParty(tb, s)}
}

// expect readies the receiver for n messages.
func (p *partyPair) expect(n int) {
	p.tb.Helper()
	if r := p.receiver.do(partyCommand{Op: "expect", N: n, Peer: p.sender.addr}); r.Err != "" {
		p.tb.Fatalf("%s: expect: %s", p.variant, r.Err)
	}
}

// send sends n messages and returns once the receiver has counted them.
func (p *partyPair) send(n int) {
	p.tb.Helper()
	if r := p.sender.do(partyCommand{Op: "send", N: n, Peer: p.receiver.addr}); r.Err != "" {
		p.tb.Fatalf("%s: %s (the receiver counted %d of %d)", p.variant, r.Err, p.receiver.do(partyCommand{Op: "count"}).Count, n)
	}
}

func (p *partyPair) deliver(n int) {
	p.tb.Helper()
	p.expect(n)
	p.send(n)
}

// throughputEnv, set to the JSON of a partySpec, makes this test binary a
// party of BenchmarkRemoteThroughput. TestMain is node_test.go's; the role
// is taken in init, which runs before it.
const throughputEnv = "REMOTING_BENCH_PARTY"

func init() {
	if spec := os.Getenv(throughputEnv); spec != "" {
		os.Exit(runParty(spec))
	}
}

// partySpec configures one party: its remote as Variant says.
type partySpec struct {
	Variant string // bare, tether, tether_tls
	TLS     TLSFiles
}

// partyCommand is what a party is told; Peer is the other party's
// address.
type partyCommand struct {
	Op   string // expect, send, count, quit
	N    int
	Peer string
}

// partyReply answers one command (the first, unasked, carries Addr).
type partyReply struct {
	Addr  string
	Err   string
	Count int64
}

// party is one actor system with remote started, a "sink" actor that
// counts Heartbeats and acknowledges the last one expected, and an "ack"
// actor that hears that acknowledgement.
type party struct {
	sys       *actor.ActorSystem
	sink, ack *actor.PID
	acked     chan struct{}
	count     atomic.Int64 // Heartbeats the sink counted since expect
}

// expectation resets the sink: it acknowledges to ackTo once it has
// counted n Heartbeats. Sent locally, so it need not be protobuf.
type expectation struct {
	n     int64
	ackTo *actor.PID
}

func runParty(spec string) int {
	var s partySpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rc, err := partyConfig(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p := &party{sys: actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory())), acked: make(chan struct{}, 1)}
	r := remote.NewRemote(p.sys, rc)
	r.Start()
	p.sink, _ = p.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &sink{count: &p.count} }), "sink")
	p.ack, _ = p.sys.Root.SpawnNamed(actor.PropsFromFunc(p.onAck), "ack")

	out := json.NewEncoder(os.Stdout)
	_ = out.Encode(partyReply{Addr: p.sys.Address()})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var c partyCommand
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		_ = out.Encode(p.do(c))
		if c.Op == "quit" {
			break
		}
	}
	// As runNode: the process ends what a graceful shutdown would race on.
	r.Shutdown(false)
	p.sys.Shutdown()
	return 0
}

func partyConfig(s partySpec) (*remote.Config, error) {
	l := logrus.New()
	l.SetOutput(io.Discard)
	switch s.Variant {
	case "bare":
		return remote.Configure("127.0.0.1", 0), nil
	case "tether":
		return Configure(Config{Addr: loopback, Log: l})
	case "tether_tls":
		return Configure(Config{Addr: loopback, TLS: s.TLS, Log: l})
	}
	return nil, fmt.Errorf("unknown variant %q", s.Variant)
}

func (p *party) do(c partyCommand) partyReply {
	switch c.Op {
	case "expect":
		e := expectation{n: int64(c.N), ackTo: actor.NewPID(c.Peer, "ack")}
		if _, err := p.sys.Root.RequestFuture(p.sink, e, wait).Result(); err != nil {
			return partyReply{Err: err.Error()}
		}
		return partyReply{}
	case "send":
		return p.send(c.N, actor.NewPID(c.Peer, "sink"))
	case "count":
		return partyReply{Count: p.count.Load()}
	case "quit":
		return partyReply{}
	}
	return partyReply{Err: "unknown op " + c.Op}
}

// send sends n Heartbeats to to, as fast as this goroutine can, and
// waits for the acknowledgement of the last.
func (p *party) send(n int, to *actor.PID) partyReply {
	hb := &messages.Heartbeat{Node: "node-0001"}
	for range n {
		p.sys.Root.RequestWithCustomSender(to, hb, p.ack)
	}
	select {
	case <-p.acked:
		return partyReply{}
	case <-time.After(12 * wait):
		return partyReply{Err: fmt.Sprintf("no acknowledgement of %d messages within %s", n, 12*wait)}
	}
}

func (p *party) onAck(ctx actor.Context) {
	if _, ok := ctx.Message().(*messages.Heartbeat); ok {
		select {
		case p.acked <- struct{}{}:
		default: // one is waiting already; a send waits for one
		}
	}
}

// sink counts Heartbeats and acknowledges the one that completes what
// it expects.
type sink struct {
	count *atomic.Int64
	want  int64
	ackTo *actor.PID
}

func (s *sink) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case expectation:
		s.count.Store(0)
		s.want, s.ackTo = m.n, m.ackTo
		ctx.Respond(true)
	case *messages.Heartbeat:
		if s.count.Add(1) == s.want {
			ctx.Send(s.ackTo, &messages.Heartbeat{Node: "ack"})
		}
	}
}

// partyProc is a party process as the benchmark drives it (proc is
// node_test.go's for tests, bound to *testing.T).
type partyProc struct {
	tb      testing.TB
	cmd     *exec.Cmd
	enc     *json.Encoder
	replies chan partyReply
	stderr  syncBuffer
	addr    string
}

// startParty starts a party process for s and waits for its address;
// cleanup ends it.
func startParty(tb testing.TB, s partySpec) *partyProc {
	tb.Helper()
	spec, err := json.Marshal(s)
	if err != nil {
		tb.Fatal(err)
	}
	p := &partyProc{tb: tb, replies: make(chan partyReply, 1)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), throughputEnv+"="+string(spec), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	p.cmd.Stderr = &p.stderr
	in, err := p.cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p.enc = json.NewEncoder(in)
	go func() {
		defer close(p.replies)
		dec := json.NewDecoder(out)
		for {
			var r partyReply
			if dec.Decode(&r) != nil {
				return
			}
			p.replies <- r
		}
	}()
	tb.Cleanup(p.close)
	p.addr = p.next("its address", wait).Addr
	if p.addr == "" {
		tb.Fatalf("party gave no address; stderr: %s", p.stderr.String())
	}
	return p
}

func (p *partyProc) next(what string, within time.Duration) partyReply {
	p.tb.Helper()
	select {
	case r, ok := <-p.replies:
		if !ok {
			p.tb.Fatalf("party ended before %s: %v; stderr: %s", what, p.cmd.Wait(), p.stderr.String())
		}
		return r
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		p.tb.Fatalf("party did not answer %s within %s; stderr: %s", what, within, p.stderr.String())
	}
	return partyReply{}
}

// do sends c and returns the party's reply; a send may take as long as
// the party waits for its acknowledgement, and a little more.
func (p *partyProc) do(c partyCommand) partyReply {
	p.tb.Helper()
	if err := p.enc.Encode(c); err != nil {
		p.tb.Fatalf("%s: %v; stderr: %s", c.Op, err, p.stderr.String())
	}
	return p.next(c.Op, 14*wait)
}

func (p *partyProc) close() {
	_ = p.enc.Encode(partyCommand{Op: "quit"})
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			p.tb.Errorf("party %s: %v; stderr: %s", p.addr, err, p.stderr.String())
		}
	case <-time.After(2 * wait):
		_ = p.cmd.Process.Kill()
		<-done
		p.tb.Errorf("party %s did not exit; stderr: %s", p.addr, p.stderr.String())
	}
}
