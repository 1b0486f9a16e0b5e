// Package csi is a cloud.Provider over a CSI driver's controller plugin
// (Dial: its unix socket, the spec's gRPC), and the pieces its node side
// (node/csinode) shares: Connect, Capability, the device path encoding
// (DevicePathFor, PublishContext, DeviceAccess) and the error mapping
// (MapError).
//
// It believes a driver only as far as the spec promises (Verification),
// never creates or deletes a volume, never sends a call whose ctx is done,
// lets no driver act past the caller's deadline (DeadlineMargin), never
// retries, and imports no actor or node code.
//
// See docs/storage.md#the-csi-provider-inside for node IDs, the device
// path, verification and the error table.
package csi
