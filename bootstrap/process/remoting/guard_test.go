package remoting

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/messages"
)

// fakeStream plays msgs to RecvMsg, then io.EOF.
type fakeStream struct {
	grpc.ServerStream
	ctx  context.Context
	msgs []*remote.RemoteMessage
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) RecvMsg(m any) error {
	if len(f.msgs) == 0 {
		return io.EOF
	}
	m.(*remote.RemoteMessage).MessageType = f.msgs[0].MessageType // as is, nil fields included
	f.msgs = f.msgs[1:]
	return nil
}

func newGuard() (*guard, *logtest.Hook) {
	l, h := logtest.NewNullLogger()
	l.SetOutput(io.Discard)
	return &guard{screen: newScreen(DefaultAccept()), log: l}, h
}

func peerCtx() context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}})
}

// recvAll is the endpoint reader's loop: it reads until EOF and returns
// what it read.
func recvAll(got *[]*remote.RemoteMessage) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		for {
			m := new(remote.RemoteMessage)
			if err := ss.RecvMsg(m); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			*got = append(*got, m)
		}
	}
}

var receiveInfo = &grpc.StreamServerInfo{FullMethod: receiveMethod}

func batchOf(envs ...*remote.MessageEnvelope) *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{"tether.messages.Heartbeat", "tether.messages.NoSuchMessage"},
		Targets:   []*actor.PID{actor.NewPID("127.0.0.1:1", "echo")},
		Envelopes: envs,
	}}}
}

// Messages the endpoint reader would dereference blindly arrive complete,
// and every rejection names the peer and the address it claims.
func TestStreamScreens(t *testing.T) {
	g, h := newGuard()
	hb, err := proto.Marshal(&messages.Heartbeat{Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	connect := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{Address: "127.0.0.1:5555"}},
	}}}
	ss := &fakeStream{ctx: peerCtx(), msgs: []*remote.RemoteMessage{
		{MessageType: &remote.RemoteMessage_ConnectRequest{}},
		{MessageType: &remote.RemoteMessage_MessageBatch{}},
		connect,
		batchOf(&remote.MessageEnvelope{MessageData: hb}, &remote.MessageEnvelope{TypeId: 1}),
	}}
	var got []*remote.RemoteMessage
	if err := g.stream(nil, ss, receiveInfo, recvAll(&got)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].GetConnectRequest() == nil || got[1].GetMessageBatch() == nil {
		t.Fatalf("read %v", got)
	}
	if n := len(got[3].GetMessageBatch().GetEnvelopes()); n != 1 {
		t.Fatalf("%d envelopes reached the reader, want the heartbeat only", n)
	}
	e := h.AllEntries()
	if len(e) != 1 || e[0].Data["peer"] != "127.0.0.1:4242" || e[0].Data["peer_address"] != "127.0.0.1:5555" || e[0].Data["reason"] != reasonUnknown {
		t.Fatalf("logged %v", e)
	}
}

// A peer cannot flood the log: past loggedPerStream rejections are only
// counted, and the count is logged when its stream ends.
func TestStreamBoundsRejectionLog(t *testing.T) {
	g, h := newGuard()
	var envs []*remote.MessageEnvelope
	for range loggedPerStream + 50 {
		envs = append(envs, &remote.MessageEnvelope{TypeId: 1})
	}
	var got []*remote.RemoteMessage
	ss := &fakeStream{ctx: peerCtx(), msgs: []*remote.RemoteMessage{batchOf(envs...)}}
	if err := g.stream(nil, ss, receiveInfo, recvAll(&got)); err != nil {
		t.Fatal(err)
	}
	e := h.AllEntries()
	if len(e) != loggedPerStream+1 || e[len(e)-1].Data["count"] != 50 {
		t.Fatalf("%d entries, the last %v", len(e), e[len(e)-1].Data)
	}
}

// A panic in the reader ends its stream, not the process.
func TestStreamRecovers(t *testing.T) {
	g, h := newGuard()
	err := g.stream(nil, &fakeStream{ctx: peerCtx()}, receiveInfo, func(any, grpc.ServerStream) error { panic("boom") })
	if status.Code(err) != codes.Internal {
		t.Fatalf("error %v, want Internal", err)
	}
	if e := h.LastEntry(); e == nil || e.Level != logrus.ErrorLevel || !strings.Contains(e.Data["stack"].(string), "TestStreamRecovers") {
		t.Fatalf("logged %v", e)
	}
}

// Streams of other methods pass as they are.
func TestStreamOtherMethods(t *testing.T) {
	g, _ := newGuard()
	ss := &fakeStream{ctx: peerCtx()}
	err := g.stream(nil, ss, &grpc.StreamServerInfo{FullMethod: "/other.Service/Stream"}, func(_ any, s grpc.ServerStream) error {
		if s != ss {
			t.Error("the stream was wrapped")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:1": true, "127.0.0.2:1": true, "[::1]:1": true,
		"192.0.2.1:9": false, "[2001:db8::1]:9": false, "0.0.0.0:9": false, "nonsense": false,
	} {
		if err := loopbackOnly("tcp", addr, nil); (err == nil) != ok || err != nil && !errors.Is(err, ErrPlainDial) {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

// Without TLS, dialing beyond loopback fails before a packet leaves;
// localhost is loopback once resolved.
func TestDialLoopback(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	c, err := dialLoopback(ctx, "localhost:"+port)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := dialLoopback(ctx, "192.0.2.1:9"); !errors.Is(err, ErrPlainDial) {
		t.Fatalf("dialing 192.0.2.1: %v, want %v", err, ErrPlainDial)
	}
}
