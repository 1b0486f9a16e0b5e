// Package csitest is a stateful fake CSI driver for tests: Identity,
// Controller and Node services over one in-memory state of volumes, the
// nodes they are published to, and their staging and target paths on
// each node. Serve serves it on a unix socket with csi-test's driver
// package. It checks requests as the CSI spec asks (csi-test's sanity
// suite passes against it, see sanity_test.go) and answers with the
// spec's codes, which is what tether's CSI client is tested against.
// "Mounting" creates and removes the target (a directory for access type
// Mount, an empty file for Block), nothing more. Calls logs the calls
// about volumes it received, the ground truth of what a CO asked. Listen
// serves it outside a test (csifake, a command to run tether up against
// by hand).
//
// Config is a matrix of optional shapes, each one a way real drivers
// differ within the spec (v1.x csi.proto), each independent of the others:
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
//
// The zero value of each field is the plainest driver, and the shape the
// sanity suite checks (with the optional capabilities on).
//
// csi-test v5 no longer ships its stateful mock driver (mock/service), only
// the server plumbing (driver) and gomock stubs; this package stands in for
// the former.
package csitest
