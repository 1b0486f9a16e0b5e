package process

// What a CSI driver needs of each volume besides its access mode: raw
// block or mounted (and how), its volume_context and its secrets (the
// store's store.VolumeSpec driver fields). The store keeps the name of a
// volume's secrets file, never a secret: the file is read each time a
// call needs it (so a secret rotated in its file is used at the next
// call), its content handed to the call and dropped, never logged, never
// put in an error, never stored.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
	"github.com/tether/tether/cloud/files/names"
)

const (
	// CSISecretsDir, under the data directory, holds the volumes' secrets
	// files: <name>.json for a volume whose csi.secretRef is <name>.
	CSISecretsDir = "csi-secrets"
	// maxSecretsBytes bounds a secrets file: a few keys and tokens.
	maxSecretsBytes = 64 << 10
)

var _ api.DriverVolumes = (*csiAccount)(nil)

// CSISecretsPath is the secrets file of secretRef ref under dataDir, once
// ref is checked to be a valid name (names.ValidName): nothing else
// becomes a path, so none leaves the directory.
func CSISecretsPath(dataDir, ref string) (string, error) {
	if err := names.ValidName(names.KindSecret, ref); err != nil {
		return "", fmt.Errorf("csi: %w", err)
	}
	return filepath.Join(dataDir, CSISecretsDir, ref+".json"), nil
}

// ReadCSISecrets reads the secrets file of ref under dataDir: a regular
// file (no symlink), readable and writable by its owner alone (mode 0600
// or stricter: no group or other bits), in a real directory CSISecretsDir,
// holding one flat JSON object of strings. An error names the file and
// what is wrong (its mode, its kind, the offset of bad JSON), never what
// the file holds.
func ReadCSISecrets(dataDir, ref string) (cloudcsi.Secrets, error) {
	if dataDir == "" {
		return nil, fmt.Errorf("csi: secrets of %q: this process has no data directory to read %s/ from (give it --data-dir)", ref, CSISecretsDir)
	}
	path, err := CSISecretsPath(dataDir, ref)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if fi, err := os.Lstat(dir); err != nil {
		return nil, fmt.Errorf("csi: secrets of %q: %w", ref, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("csi: secrets of %q: %s is a %s, not a directory", ref, dir, fi.Mode().Type())
	}
	before, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("csi: secrets of %q: %w", ref, err)
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("csi: secrets file %s is a %s, not a regular file", path, before.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("csi: secrets of %q: %w", ref, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("csi: secrets file %s: %w", path, err)
	}
	if !os.SameFile(before, fi) { // replaced (by a symlink?) between the two looks
		return nil, fmt.Errorf("csi: secrets file %s changed while it was opened: try again", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("csi: secrets file %s has mode %04o: it must be readable by its owner alone (mode 0600 or stricter: chmod 600 %s)", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSecretsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("csi: secrets file %s: %w", path, err)
	}
	if len(data) > maxSecretsBytes {
		return nil, fmt.Errorf("csi: secrets file %s is larger than %d bytes", path, maxSecretsBytes)
	}
	var s map[string]string
	if err := json.Unmarshal(data, &s); err != nil || s == nil {
		// json's own message may quote the content: say where only.
		where := ""
		var se *json.SyntaxError
		if errors.As(err, &se) {
			where = fmt.Sprintf(" (invalid JSON at offset %d)", se.Offset)
		}
		return nil, fmt.Errorf("csi: secrets file %s does not hold a flat JSON object of strings%s", path, where)
	}
	return s, nil
}

// csiAccessOf is how v is used, as cloud/csi asks for it, its secrets
// read from dataDir now.
func csiAccessOf(dataDir string, v store.VolumeSpec) (cloudcsi.Access, error) {
	a := cloudcsi.Access{Mode: v.Mode, ReadOnly: v.ReadOnly, Block: v.Block, FsType: v.FsType,
		MountFlags: v.MountOptions, VolumeContext: v.VolumeAttributes, SecretRef: v.SecretRef}
	if v.SecretRef != "" {
		s, err := ReadCSISecrets(dataDir, v.SecretRef)
		if err != nil {
			return cloudcsi.Access{}, fmt.Errorf("volume %s: csi.secretRef %q: %w", v.ID, v.SecretRef, err)
		}
		a.Secrets = s
	}
	return a, nil
}

// ProvisionVolumes implements api.DriverVolumes: the driver must have
// each volume and confirm its capability with its volume_context and
// secrets (ValidateVolumeCapabilities); its secrets file must be there
// and right. Nothing is created. A refusal wraps controller.ErrInvalid
// and says what to do.
func (a *csiAccount) ProvisionVolumes(vols []store.VolumeSpec) error {
	ctx, cancel := context.WithTimeout(context.Background(), csiCallTimeout)
	defer cancel()
	driver := a.p.Plugin().Name
	for _, v := range vols {
		access, err := csiAccessOf(filepath.Dir(a.path), v)
		if err != nil {
			return fmt.Errorf("%w: %w", controller.ErrInvalid, err)
		}
		err = a.p.Validate(ctx, v.ID, access)
		switch cloud.Classify(err) {
		case cloud.KindNone:
		case cloud.KindNotFound:
			return fmt.Errorf("%w: volume %q: CSI driver %q has no volume with that ID: tether does not create CSI volumes; provision it with the driver (its volume ID is the tether volume's name), then apply again", controller.ErrInvalid, v.ID, driver)
		case cloud.KindTerminal:
			return fmt.Errorf("%w: volume %q cannot be used %s: %v", controller.ErrInvalid, v.ID, describeAccess(v), err)
		default:
			return fmt.Errorf("volume %q: could not ask CSI driver %q about it (apply again): %w", v.ID, driver, err)
		}
	}
	return nil
}

// describeAccess names v's access mode, and its volume mode if Block.
func describeAccess(v store.VolumeSpec) string {
	if v.Block {
		return controller.ModeName(v.Mode, v.ReadOnly) + " as a raw block volume (volumeMode Block)"
	}
	return controller.ModeName(v.Mode, v.ReadOnly)
}
