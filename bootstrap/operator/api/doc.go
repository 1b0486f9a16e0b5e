// Package api serves tether's operator API (messages/api.proto) over gRPC:
// every call authenticated with the bearer token stored under the data
// directory, loopback only unless told otherwise and then over TLS only
// (optionally requiring client certificates), requests bounded in size.
// It translates requests into Controller calls and never decides anything
// about the desired state itself: validation of names, references, access
// modes and atomicity live in the controller and the store. It decides
// only which cloud resources an apply needs (provision.go).
package api
