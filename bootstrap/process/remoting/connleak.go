package remoting

import (
	"context"

	"google.golang.org/grpc"
)

// Proto.Actor's endpoint writer (remote/endpoint_writer.go, pinned
// version) dials a peer up to MaxRetryCount times and keeps only the last
// connection: every earlier one whose Receive stream failed (the peer is
// down, refuses our certificate, or answers late) is left open, and gRPC
// goes on reconnecting it with backoff for the life of the process. A
// member that pings a dead peer every few seconds would pile them up.
//
// Proto.Actor opens exactly one Receive stream per connection, so a
// connection whose Receive stream failed is of no further use:
// closeFailedConn closes it. The endpoint writer's own close of its last
// connection then finds it closed, which is harmless.

// closeFailedConn is a stream interceptor that closes the connection of
// a Receive stream that could not be opened, or that failed.
func closeFailedConn(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if method != receiveMethod {
		return s, err
	}
	if err != nil {
		_ = cc.Close()
		return nil, err
	}
	return &closingStream{ClientStream: s, cc: cc}, nil
}

// closingStream closes its connection once a send or a receive failed:
// the stream is over, and nothing else uses the connection.
type closingStream struct {
	grpc.ClientStream
	cc *grpc.ClientConn
}

func (s *closingStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err != nil {
		_ = s.cc.Close()
	}
	return err
}

func (s *closingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		_ = s.cc.Close()
	}
	return err
}
