package csitest

import (
	"context"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
)

// Config of a fake driver. The zero value is a controller with
// PUBLISH_UNPUBLISH_VOLUME and CREATE_DELETE_VOLUME and no way to verify
// attachments, and no nodes: the plainest driver, and the shape the
// sanity suite checks (with the optional capabilities on).
//
// Each field is one axis, independent of the others, of the matrix of
// shapes real drivers take within the spec (v1.x csi.proto):
//
//   - capabilities: no controller (NoController), no controller publishing
//     (NoPublish), no PUBLISH_READONLY (NoPublishReadOnly), LIST_VOLUMES
//     with or without published nodes (List, ListPublished), GET_VOLUME
//     (GetVolume), STAGE_UNSTAGE_VOLUME (StageUnstage);
//   - what it reports: published_node_ids filled loosely without
//     LIST_VOLUMES_PUBLISHED_NODES (LoosePublishedNodes,
//     ExtraPublishedNodeIDs), a volume_context (VolumeContext);
//   - what it demands: the volume_context back (RequireVolumeContext),
//     secrets (RequireSecrets), supported access modes (Unsupported), raw
//     block or mounted volumes only (BlockOnly, MountOnly);
//   - how it holds: node attach limits (Nodes, EnforceNodeLimit),
//     multi-attach disks (MultiAttach), ListVolumes pages (PageSize), a
//     start-up during which it is not ready (ProbeFailures, InfoFailures),
//     and any failure or delay a test injects (Before).
type Config struct {
	// Name is GetPluginInfo's name (default "csi.tether.test").
	Name string
	// Nodes are the node IDs the controller knows, with each one's
	// max_volumes_per_node (0: no limit).
	Nodes map[string]int64
	// NoController: GetPluginCapabilities leaves out CONTROLLER_SERVICE.
	NoController bool
	// NoPublish: the controller lacks PUBLISH_UNPUBLISH_VOLUME.
	NoPublish bool
	// NoPublishReadOnly: the controller lacks PUBLISH_READONLY, and
	// refuses a ControllerPublishVolume with readonly (INVALID_ARGUMENT).
	NoPublishReadOnly bool
	// Unsupported are access modes the driver does not support:
	// ValidateVolumeCapabilities does not confirm them, saying so, and
	// ControllerPublishVolume, NodeStageVolume and NodePublishVolume
	// refuse them (INVALID_ARGUMENT).
	Unsupported []spec.VolumeCapability_AccessMode_Mode
	// List: LIST_VOLUMES; ListPublished adds LIST_VOLUMES_PUBLISHED_NODES.
	List, ListPublished bool
	// GetVolume: GET_VOLUME (ControllerGetVolume).
	GetVolume bool
	// StageUnstage: the node offers STAGE_UNSTAGE_VOLUME.
	StageUnstage bool
	// MultiAttach: a single-node volume may be published to several
	// nodes (a multi-attach disk) instead of FAILED_PRECONDITION.
	MultiAttach bool
	// PageSize: ListVolumes entries per page when the request sets no
	// max_entries (0: all).
	PageSize int
	// Before, if set, runs at the start of every call with its method's
	// name ("ControllerPublishVolume") and the call's context: it may
	// block, and an error it returns is the call's answer.
	Before func(ctx context.Context, method string) error

	// LoosePublishedNodes models a driver without
	// LIST_VOLUMES_PUBLISHED_NODES that fills published_node_ids all the
	// same, loosely, as the spec allows ("MAY include nodes not published
	// to"; without the capability "the CO MUST not interpret this
	// field"). Unless ListPublished is set, ControllerGetVolume's status
	// and ListVolumes' entries' status (with List) report [""] for a
	// volume no NodePublishVolume ever succeeded for, else [the node ID of
	// the last node plugin one succeeded on], kept for ever (after
	// NodeUnpublishVolume and ControllerUnpublishVolume too): never the
	// true set.
	LoosePublishedNodes bool
	// ExtraPublishedNodeIDs are appended to every volume's loose list
	// (stale or unknown nodes); only with LoosePublishedNodes.
	ExtraPublishedNodeIDs []string
	// EnforceNodeLimit: ControllerPublishVolume to a node with a limit in
	// Nodes that already has that many volumes published (not counting
	// this one) fails with RESOURCE_EXHAUSTED and changes nothing. The
	// fake has always enforced it, and still does when this is false (the
	// zero Config keeps its behaviour); set it to say so in a table.
	EnforceNodeLimit bool
	// VolumeContext: every volume (CreateVolume, AddVolume) gets the
	// volume_context {VolumeContextKey: "share-<volume ID>"}, which
	// CreateVolume, ListVolumes and ControllerGetVolume return.
	VolumeContext bool
	// RequireVolumeContext (implies VolumeContext): ControllerPublishVolume,
	// NodeStageVolume and NodePublishVolume fail (INVALID_ARGUMENT) unless
	// the request's volume_context is exactly the volume's.
	RequireVolumeContext bool
	// RequireSecrets, if not nil: ControllerPublishVolume,
	// ControllerUnpublishVolume, NodeStageVolume and NodePublishVolume
	// fail (INVALID_ARGUMENT) unless the request's secrets hold every one
	// of these keys with its value. Values never show in errors or Calls.
	RequireSecrets map[string]string
	// BlockOnly: the driver supports raw block volumes only, and refuses
	// a capability with access type Mount (ValidateVolumeCapabilities does
	// not confirm it, saying so; ControllerPublishVolume,
	// NodeStageVolume and NodePublishVolume fail with INVALID_ARGUMENT).
	// MountOnly likewise refuses access type Block.
	BlockOnly, MountOnly bool
	// ProbeFailures and InfoFailures: the first so many Probe and
	// GetPluginInfo calls (that Before lets through) fail with
	// UNAVAILABLE, as a driver that is not ready yet.
	ProbeFailures, InfoFailures int
}

// VolumeContextKey is the key of the volume_context a volume gets with
// Config.VolumeContext.
const VolumeContextKey = "csi.tether.test/share"
