// Package certs owns the certificates tether's TLS runs on: a small local
// certificate authority (ECDSA P-256) that signs server and client
// certificates, the PEM files they are kept in, and the tls.Configs built
// from such files for servers (optionally requiring client certificates)
// and clients (trusting a given CA).
//
// It never listens, dials or decides whether TLS is needed (its callers
// do), never overwrites a file unless told to, and writes private keys
// with mode 0600 only.
//
// See docs/operating.md#tls-and-tokens-tether-certs---allow-remote.
package certs
