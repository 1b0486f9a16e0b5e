package remoting

import (
	"context"
	"runtime/debug"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// The gRPC service of Proto.Actor remote: one stream carries all of a
// peer's messages; its unary methods are unimplemented and panic.
const (
	remotingService = "/remote.Remoting/"
	receiveMethod   = remotingService + "Receive"
)

// loggedPerStream bounds the rejections logged one by one per stream, so
// that a peer cannot flood the log; the rest are counted, and the count
// logged when the stream ends.
const loggedPerStream = 100

// guard is the listener's gRPC interceptors.
type guard struct {
	screen screen
	log    logrus.FieldLogger
}

// stream screens every message batch of a Receive stream before
// Proto.Actor's endpoint reader reads it. If the reader panics all the
// same, the panic ends this stream only (the peer reconnects) and is
// logged with its stack, instead of ending the process.
func (g *guard) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	if info.FullMethod != receiveMethod {
		return handler(srv, ss)
	}
	s := &screenedStream{ServerStream: ss, g: g, peer: peerFields(ss.Context())}
	defer func() {
		if r := recover(); r != nil {
			g.log.WithFields(s.fields()).WithFields(logrus.Fields{"panic": r, "stack": string(debug.Stack())}).
				Error("remoting: Proto.Actor panicked on a peer's stream; the stream is closed")
			err = status.Error(codes.Internal, "remoting: receiving failed")
		}
		if s.unlogged > 0 {
			g.log.WithFields(s.fields()).WithField("count", s.unlogged).
				Warn("remoting: rejected more messages from a peer than were logged one by one")
		}
	}()
	return handler(srv, s)
}

// unary refuses every unary call: the pinned Remoting service has two,
// ListProcesses and GetProcessDiagnostics, and both panic.
func (g *guard) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, remotingService) {
		g.log.WithFields(peerFields(ctx)).WithField("method", info.FullMethod).Warn("remoting: refused an unimplemented call")
		return nil, status.Errorf(codes.Unimplemented, "remoting: %s is not served", info.FullMethod)
	}
	return handler(ctx, req)
}

// screenedStream is a Receive stream whose batches are screened as they
// are read. RecvMsg is called from the handler's goroutine only.
type screenedStream struct {
	grpc.ServerStream
	g        *guard
	peer     logrus.Fields
	address  string // the actor system address the peer claims
	logged   int
	unlogged int
}

func (s *screenedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	rm, ok := m.(*remote.RemoteMessage)
	if !ok {
		return nil
	}
	switch t := rm.MessageType.(type) {
	case *remote.RemoteMessage_ConnectRequest:
		if t.ConnectRequest == nil { // the reader dereferences it
			t.ConnectRequest = &remote.ConnectRequest{}
		}
		s.address = t.ConnectRequest.GetServerConnection().GetAddress()
	case *remote.RemoteMessage_MessageBatch:
		if t.MessageBatch == nil {
			t.MessageBatch = &remote.MessageBatch{}
		}
		for _, r := range s.g.screen.batch(t.MessageBatch) {
			s.reject(r)
		}
	}
	return nil
}

func (s *screenedStream) reject(r rejection) {
	if s.logged >= loggedPerStream {
		s.unlogged++
		return
	}
	s.logged++
	f := s.fields()
	f["type"] = clip(r.typeName)
	f["reason"] = r.reason
	f["sender"] = pidString(r.sender)
	f["target"] = pidString(r.target)
	if r.err != nil {
		f["error"] = r.err
	}
	s.g.log.WithFields(f).Warn("remoting: rejected a message from a peer")
}

func (s *screenedStream) fields() logrus.Fields {
	f := make(logrus.Fields, len(s.peer)+6)
	for k, v := range s.peer {
		f[k] = v
	}
	f["peer_address"] = clip(s.address)
	return f
}

// peerFields names the peer of ctx: its network address and, over mutual
// TLS, its certificate's subject.
func peerFields(ctx context.Context) logrus.Fields {
	f := logrus.Fields{}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return f
	}
	if p.Addr != nil {
		f["peer"] = p.Addr.String()
	}
	if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
		f["peer_cert"] = ti.State.PeerCertificates[0].Subject.String()
	}
	return f
}

func pidString(p *actor.PID) string {
	if p == nil {
		return ""
	}
	return clip(p.Address + "/" + p.Id)
}

// clip bounds a string a peer chose before it goes into the log.
func clip(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}
