// Package api serves tether's operator API (messages/api.proto) over gRPC:
// every call authenticated with the bearer token stored under the data
// directory, loopback only unless told otherwise and then over TLS only
// (optionally requiring client certificates), requests bounded in size.
// It translates requests into Controller calls and never decides about
// the desired state itself (names, references, access modes and atomicity
// are the controller's and the store's); it decides only which cloud
// resources an apply needs (provision.go).
//
// See docs/operating.md#talking-to-it.
package api
