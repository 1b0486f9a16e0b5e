// Package cloud owns the narrow contract between tether's actors and a
// cloud provider: typed identities, the Provider interface and the
// classification of provider errors; and the operator API's side of a
// cloud account, the Provisioner of instances and disks (provision.go), so
// that the API needs no particular cloud. It holds no state of its own and
// never retries: retrying is the caller's business (with backoff, per
// operation).
//
// See docs/storage.md for the clouds that implement it.
package cloud
