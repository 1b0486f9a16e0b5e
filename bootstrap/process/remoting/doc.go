// Package remoting configures Proto.Actor remote (gRPC) for tether's
// distributed mode: Configure turns a Config into the *remote.Config that
// remote.NewRemote and cluster.Configure take.
//
// It guarantees three rules: the listener stays on loopback unless
// AllowRemote, and nothing beyond loopback runs without mutual TLS;
// with TLS every peer is verified against one CA both ways; every message
// batch a peer sends is screened, so an unknown, undecodable or malformed
// envelope is dropped and logged instead of panicking the process. It
// never starts remote or a cluster, reads certificate files only in
// Configure, and does not import bootstrap (its errors mirror bootstrap's).
//
// See docs/distributed.md#remoting-exposure-mutual-tls-screening.
package remoting
