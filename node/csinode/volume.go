package csinode

import (
	"context"
	"errors"
	"fmt"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
)

// Stage stages vol at stagingPath (NodeStageVolume), creating the
// directory first (for a raw block volume too: the spec has the CO
// create a directory, the plugin puts what it wants in it), with the
// publish context that device (the controller's device path) carries,
// the capability of a (cloud/csi.Capability, as the controller published
// with), a's volume_context and secrets. A plugin that does not stage:
// nothing to do. Staging again at the same path succeeds.
func (n *Node) Stage(ctx context.Context, vol cloud.VolumeID, device, stagingPath string, a cloudcsi.Access) error {
	if !n.stages {
		return nil
	}
	op := fmt.Sprintf("NodeStageVolume %s at %s", vol, stagingPath)
	pc, err := cloudcsi.PublishContext(device)
	if err != nil {
		return fmt.Errorf("csi: %s: %w", op, err)
	}
	if err := mkdir(op, stagingPath); err != nil {
		return err
	}
	req := &spec.NodeStageVolumeRequest{VolumeId: string(vol), PublishContext: pc, StagingTargetPath: stagingPath,
		VolumeCapability: cloudcsi.Capability(a, n.fsType), VolumeContext: a.VolumeContext, Secrets: a.Secrets}
	return lasting(do(ctx, op, func(c context.Context) error {
		_, err := n.rpc.NodeStageVolume(c, req)
		return err
	}))
}

// Publish makes vol show at targetPath (NodePublishVolume), creating the
// target's parent first (the plugin creates the target: a directory, or
// for a raw block volume a file), from stagingPath if the plugin stages,
// with the publish context device carries (the spec wants it here too),
// the capability of a, a's volume_context and secrets, read-only if asked
// and always for a ReadOnlyMany volume (its MULTI_NODE_READER_ONLY
// capability admits no writer). Publishing again at the same target
// succeeds.
func (n *Node) Publish(ctx context.Context, vol cloud.VolumeID, device, stagingPath, targetPath string, readOnly bool, a cloudcsi.Access) error {
	op := fmt.Sprintf("NodePublishVolume %s at %s", vol, targetPath)
	pc, err := cloudcsi.PublishContext(device)
	if err != nil {
		return fmt.Errorf("csi: %s: %w", op, err)
	}
	if !n.stages {
		stagingPath = ""
	}
	if err := mkdir(op, parent(targetPath)); err != nil {
		return err
	}
	req := &spec.NodePublishVolumeRequest{VolumeId: string(vol), PublishContext: pc, StagingTargetPath: stagingPath,
		TargetPath: targetPath, VolumeCapability: cloudcsi.Capability(a, n.fsType), Readonly: readOnly || a.ReadOnlyMany(),
		VolumeContext: a.VolumeContext, Secrets: a.Secrets}
	return lasting(do(ctx, op, func(c context.Context) error {
		_, err := n.rpc.NodePublishVolume(c, req)
		return err
	}))
}

// lasting marks a stage's or publish's NOT_FOUND (the plugin has no such
// volume) as terminal too, like INVALID_ARGUMENT: trying again soon will
// not help, so the agent waits its backoff's cap (the event says why).
func lasting(err error) error {
	if errors.Is(err, cloud.ErrNotFound) && !errors.Is(err, cloud.ErrTerminal) {
		return fmt.Errorf("%w (%w)", err, cloud.ErrTerminal)
	}
	return err
}

// Unpublish undoes Publish (NodeUnpublishVolume) and removes the target
// if the plugin left it: an empty directory, or a raw block volume's
// device file (a directory with something in it, or a target still
// mounted, is never removed: that fails, to be retried). NOT_FOUND, or
// nothing published there: success.
func (n *Node) Unpublish(ctx context.Context, vol cloud.VolumeID, targetPath string) error {
	op := fmt.Sprintf("NodeUnpublishVolume %s at %s", vol, targetPath)
	err := notFoundIsDone(do(ctx, op, func(c context.Context) error {
		_, err := n.rpc.NodeUnpublishVolume(c, &spec.NodeUnpublishVolumeRequest{VolumeId: string(vol), TargetPath: targetPath})
		return err
	}))
	if err != nil {
		return err
	}
	return removeTarget(op, targetPath)
}

// Unstage undoes Stage (NodeUnstageVolume) and removes the staging
// directory. A plugin that does not stage: nothing to do. NOT_FOUND, or
// nothing staged there: success.
func (n *Node) Unstage(ctx context.Context, vol cloud.VolumeID, stagingPath string) error {
	if !n.stages {
		return nil
	}
	op := fmt.Sprintf("NodeUnstageVolume %s at %s", vol, stagingPath)
	err := notFoundIsDone(do(ctx, op, func(c context.Context) error {
		_, err := n.rpc.NodeUnstageVolume(c, &spec.NodeUnstageVolumeRequest{VolumeId: string(vol), StagingTargetPath: stagingPath})
		return err
	}))
	if err != nil {
		return err
	}
	return removeDir(op, stagingPath)
}
