// Package remoting configures Proto.Actor remote (gRPC) for tether's
// distributed mode, where controller members (a Proto.Actor cluster) and
// node agents exchange protobuf messages. Configure turns a Config into the
// *remote.Config that both remote.NewRemote and cluster.Configure take. It
// owns three rules:
//
//   - Exposure. The listener binds loopback unless AllowRemote, and beyond
//     loopback (listening or advertised) Configure refuses to go on
//     without mutual TLS: the remote protocol has no other
//     authentication, and any peer that connects may send any actor any
//     message, system messages such as Stop included. Without TLS the process also refuses to dial beyond
//     loopback, so plain text never leaves the machine.
//   - Mutual TLS. With TLS files, the listener requires and verifies a
//     client certificate from CA, and every dial presents this process's
//     certificate and verifies the peer's against the same CA and the
//     host it dials. The options replace remote's default dial options (a
//     plain-text grpc.WithInsecure) rather than adding to them. Refused
//     handshakes are logged (remote.Start silences gRPC's own log).
//   - Screening. Every message batch a peer sends is screened before
//     Proto.Actor's endpoint reader sees it (a gRPC stream interceptor):
//     an envelope whose type this binary does not know, whose package is
//     not accepted, whose bytes do not decode, or which is otherwise
//     malformed (an index out of range, a system message without its
//     PID, a bad envelope inside a cluster pub-sub batch) is dropped and
//     logged with the peer and the type name, while the stream and the
//     envelopes around it go on. Unscreened, the
//     pinned Proto.Actor panics the whole process on an unknown type (the
//     proto serializer calls New on the nil type it failed to find, in
//     the gRPC handler goroutine, which nothing recovers) and closes the
//     peer's stream on bytes that do not decode. The two unary methods of
//     its gRPC service panic too ("implement me"): they are refused. A
//     panic in the endpoint reader all the same ends that peer's stream,
//     not the process.
//
// The package never starts remote or a cluster itself, never reads a
// certificate file outside Configure, and never decides which peers may
// exist: the CA does. Its sentinel errors mirror bootstrap's
// (ErrNotLoopback, ErrTLSFiles, ErrCloudExposed) without wrapping them,
// because bootstrap wires this package and may not be imported by it.
package remoting
