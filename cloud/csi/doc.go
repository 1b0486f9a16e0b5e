// Package csi is a cloud.Provider over a CSI driver's controller plugin,
// spoken to on its unix socket with the CSI spec's gRPC (Dial), and the
// pieces its node side (node/csinode) shares: Connect, Capability, the device
// path encoding and the error mapping. It never retries and imports no
// actor or node code.
//
// # Nodes and instances
//
// In CSI the "instance" a volume is published to is the node ID that the
// node plugin on that node reports (NodeGetInfo); the controller plugin
// cannot tell which tether node that is. The Provider keeps a registry,
// seeded by WithNodeIDs and fed by SetNodeID (the node agent reports its
// plugin's ID; the wiring passes it on), and InstanceID answers from it:
// cloud.ErrNotFound for a node that has reported none, which tether reads
// as "no instance, nothing attached". The registry lives in memory: the
// wiring must keep the reported IDs (with the node's status) and seed
// WithNodeIDs from them at start, or a controller that restarts would
// take every node for instance-less until its agent reports again. An ID
// is live while a node has it; InstanceVolumes leaves other IDs out (for
// tether, the instance is gone). Unlike a cloud that frees the disks of a deleted
// instance, a driver keeps volumes published to a node ID that no node
// reports any more: only a Detach with that ID ends it.
//
// # Attach and the device path
//
// Attach is ControllerPublishVolume with the volume's capability:
// Capability of its Access, which WithAccessModes looks up
// (cloud.Exclusive by default): SINGLE_NODE_WRITER for ReadWriteOnce,
// MULTI_NODE_MULTI_WRITER for ReadWriteMany, MULTI_NODE_READER_ONLY for
// ReadOnlyMany, which is also published read-only (readonly true, where
// the driver offers PUBLISH_READONLY); the others read-write. tether
// carries one string, the device path, from the controller to the node
// agent, and the node plugin needs the whole publish context (a device
// path is at most one driver-chosen key of it) and the capability the
// controller published with (a node agent on another machine has no
// store to read it from), so the device path carries both:
// CarryingPrefix and their JSON in base64 (DevicePathFor; the node side
// decodes them with PublishContext and DeviceAccess), the secrets by
// name only. Device paths of earlier versions (DevicePrefix: the context
// alone, DevicePath) still decode. The Provider remembers the device path of each attach
// it made until its detach, so that InstanceVolumes reports it; after a
// restart it reports "" (unknown) for attachments it did not make, and
// tether keeps the path it recorded (an idempotent attach tells it again).
//
// The capability is access type Block for a raw block volume (Access.Block),
// else Mount with the volume's file system and mount flags. Every call
// that takes them carries the volume's volume_context (the attributes its
// driver returned at CreateVolume) and its secrets, which the wiring reads
// when WithAccessModes asks; an Access never prints them (Secrets).
//
// Detach is ControllerUnpublishVolume, with the volume's secrets if they
// can be read (else without: a detach is never held back by them);
// NOT_FOUND (no such volume or node) counts as done.
//
// # Volumes
//
// The Provider never creates or deletes a volume: they are the driver's.
// Validate (ValidateVolumeCapabilities) tells whether the driver has a
// volume and confirms the capability of an Access, for a wiring that
// checks a volume before it takes it on.
//
// # Verification
//
// A driver's word about where a volume is published is believed only as
// far as the spec promises it (Verification, Listing):
//
//   - ByList, where the controller offers LIST_VOLUMES and
//     LIST_VOLUMES_PUBLISHED_NODES: VolumesAreAttached and InstanceVolumes
//     read published_node_ids with one ListVolumes paging loop per call.
//     The spec lets that list "include nodes not published to or
//     reported by the SP", so Listing is cloud.ListingMayOverstate: it can
//     reveal a publication gone missing (tether publishes again), and an
//     extra node in it is reported, never by itself unpublished.
//   - ByRecord, otherwise: "If the field is not specified and the SP does
//     not have the LIST_VOLUMES_PUBLISHED_NODES controller capability,
//     the CO MUST not interpret this field", and ControllerGetVolume's
//     published_node_ids is optional without it (real drivers fill it
//     loosely: an empty string, the last node that ran NodePublish). So
//     nothing is asked: both calls fail (cloud.ErrTerminal) and Listing is
//     cloud.ListingNone; tether's own records (intents and node statuses)
//     are the truth, as Kubernetes' CSI attacher answers from its
//     VolumeAttachment records.
//
// # The Provider contract over CSI
//
// A call whose ctx is already done is not sent. A sent call carries ctx's
// deadline, shortened by DeadlineMargin, so a driver that honours its
// request's deadline never acts after the caller's (one that ignores it
// may: CSI gives no stronger promise). Attach and Detach are sent with a
// context that ctx's cancellation does not reach, so cancelling only stops
// the wait and the driver carries the call out; reads are cancelled with
// ctx.
//
// # Errors
//
// MapError classifies a driver's status code (classOf), keeping its
// message in the text:
//
//	FAILED_PRECONDITION              cloud.ErrAttachedElsewhere
//	RESOURCE_EXHAUSTED               cloud.ErrLimitReached
//	NOT_FOUND                        cloud.ErrNotFound
//	ABORTED                          cloud.ErrRetryable
//	UNAVAILABLE, DEADLINE_EXCEEDED,
//	CANCELLED, UNKNOWN, INTERNAL     cloud.ErrRetryable, outcome unknown
//	anything else (INVALID_ARGUMENT,
//	ALREADY_EXISTS, UNIMPLEMENTED...) cloud.ErrTerminal
//
// An "outcome unknown" error also wraps ErrUnknownOutcome and
// context.DeadlineExceeded: the contract lets only context errors mean
// "may have taken effect", and gRPC produces these codes for calls that
// were (or may have been) carried out, as drivers produce INTERNAL for a
// cloud call that failed half-way. A call that fails once its ctx is done
// returns ctx's error.
package csi
