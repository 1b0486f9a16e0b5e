package csinode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// DefaultTimeout bounds each call of a Mounter to the node plugin when
// MounterConfig says nothing: the node agent's OpTimeout, as the
// kubelet's CSI calls.
const DefaultTimeout = 2 * time.Minute

// MounterConfig configures NewMounter.
type MounterConfig struct {
	// Plugin is the plugin directory of the agent's layout
	// (agent.Config.Plugin): the Mounter serves <root>/plugins/<Plugin>/mounts/<volume>
	// and <root>/pods/<uid>/volumes/<Plugin>/<volume>, nothing else.
	Plugin string
	// Mode tells how a volume is used (its access mode and whether it is
	// ReadOnlyMany, block or mounted and how, its volume_context and
	// secrets): the node must ask for the capability the controller
	// published with (cloud/csi.Capability). nil: every volume is
	// cloud.Exclusive, mounted.
	// A device path that carries the volume's access
	// (cloud/csi.DevicePathFor) is believed first: Mode serves the
	// device paths of earlier versions, which carry none.
	Mode func(context.Context, cloud.VolumeID) (cloudcsi.Access, error)
	// Secrets reads the secrets a carried access names (its SecretRef),
	// from this machine's data directory; nil: such a volume fails, saying
	// so, with nothing sent.
	Secrets func(ref string) (cloudcsi.Secrets, error)
	// Timeout bounds each call to the plugin (0: DefaultTimeout). The
	// mount.Mounter methods take no context: set it to the agent's
	// OpTimeout.
	Timeout time.Duration
	// BootID returns the machine's boot ID, "" if unknown (nil: Linux's
	// /proc/sys/kernel/random/boot_id).
	BootID func() string
}

// Mounter is a mount.Mounter over a CSI node plugin: the node agent's
// stage, publish, unpublish and unstage become NodeStageVolume,
// NodePublishVolume, NodeUnpublishVolume and NodeUnstageVolume, at the
// paths of the agent's layout (the plugin mounts there itself). The
// agent's stage source is the device path the controller reported
// (Devices hands it over as is): it carries the publish context. The
// volume is read from the target path, which must be one of the
// layout's for Plugin (else mount.ErrOutside, nothing sent); the parents
// of a target are created by the Mounter, refusing symlinks
// (mount.MakeParents).
//
// What is mounted is recorded in StateFile (see record: written before
// every call, completed after), and Inspect answers from it: a plugin
// may mount nothing the Mounter could see (a fake, a driver whose staging
// is a no-op), and a CO cannot ask a plugin what it has staged or
// published. A record is trusted only for the boot it was written in: a
// machine that rebooted lost its plugin's mounts, and every target is
// then Partial, redone or undone by the agent. A target that is gone is
// Absent, whatever the record says. A target is a directory, or for a
// raw block volume a file (the plugin's device file): nothing here, in
// the agent's scan or in its cleanup of empty parents asks which. So that the agent's scan
// finds a staged volume of a plugin without STAGE_UNSTAGE_VOLUME, the
// Mounter keeps an empty directory at its staging path.
type Mounter struct {
	node    *Node
	layout  layout.Layout
	plugin  string
	mode    func(context.Context, cloud.VolumeID) (cloudcsi.Access, error)
	secrets func(ref string) (cloudcsi.Secrets, error)
	timeout time.Duration
	st      *stateFile
}

var _ mount.Mounter = (*Mounter)(nil)

// NewMounter returns the Mounter of the node plugin n for the data
// directory of l, reading StateFile there.
func NewMounter(n *Node, l layout.Layout, cfg MounterConfig) (*Mounter, error) {
	if err := layout.ValidName(layout.KindPlugin, cfg.Plugin); err != nil {
		return nil, fmt.Errorf("csi: mounter: %w", err)
	}
	boot := cfg.BootID
	if boot == nil {
		boot = currentBootID
	}
	st, err := loadState(l.Root(), boot())
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Mounter{node: n, layout: l, plugin: cfg.Plugin, mode: cfg.Mode, secrets: cfg.Secrets, timeout: timeout, st: st}, nil
}

// Name implements mount.Mounter.
func (m *Mounter) Name() string { return "csi" }

// target is a parsed target path.
type target struct {
	kind string // kindStage or kindPublish
	vol  cloud.VolumeID
	rel  string // relative to the root
	path string // clean, absolute
}

// parse reads the volume from path, one of the layout's targets of the
// plugin of kind.
func (m *Mounter) parse(kind, path string) (target, error) {
	clean := filepath.Clean(path)
	rel, err := filepath.Rel(m.layout.Root(), clean)
	if err != nil || !m.layout.Contains(clean) || clean == m.layout.Root() {
		return target{}, fmt.Errorf("csi: %s %q: not below the data directory %s: %w", kind, path, m.layout.Root(), mount.ErrOutside)
	}
	p := strings.Split(rel, string(filepath.Separator))
	var vol string
	switch {
	case kind == kindStage && len(p) == 4 && p[0] == layout.PluginsDir && p[1] == m.plugin && p[2] == layout.MountsDir:
		vol = p[3]
	case kind == kindPublish && len(p) == 5 && p[0] == layout.PodsDir && p[2] == layout.VolumesDir && p[3] == m.plugin:
		if err := layout.ValidName(layout.KindWorkload, p[1]); err != nil {
			return target{}, fmt.Errorf("csi: %s %q: %w: %w", kind, path, err, mount.ErrOutside)
		}
		vol = p[4]
	default:
		return target{}, fmt.Errorf("csi: %s %q: not a %s target of plugin %s: %w", kind, path, kind, m.plugin, mount.ErrOutside)
	}
	if err := layout.ValidName(layout.KindVolume, vol); err != nil {
		return target{}, fmt.Errorf("csi: %s %q: %w: %w", kind, path, err, mount.ErrOutside)
	}
	return target{kind: kind, vol: cloud.VolumeID(vol), rel: rel, path: clean}, nil
}

// call runs f with a context bounded by the Mounter's timeout and how
// the volume is used: as device (the controller's device path) carries
// it, else as Mode says.
func (m *Mounter) call(vol cloud.VolumeID, device string, f func(context.Context, cloudcsi.Access) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	a := cloudcsi.Access{Mode: cloud.Exclusive}
	if got, ok, err := cloudcsi.DeviceAccess(device); err != nil {
		return err
	} else if ok {
		if got.SecretRef != "" {
			if m.secrets == nil {
				return fmt.Errorf("csi: volume %s: its secrets %q cannot be read here (no secrets directory), nothing sent: %w", vol, got.SecretRef, cloud.ErrTerminal)
			}
			if got.Secrets, err = m.secrets(got.SecretRef); err != nil {
				return fmt.Errorf("csi: volume %s: nothing sent: %w", vol, err)
			}
		}
		return f(ctx, got)
	}
	if m.mode != nil {
		got, err := m.mode(ctx, vol)
		if err != nil {
			return fmt.Errorf("csi: reading how volume %s is used, nothing sent: %v: %w", vol, err, cloud.ErrRetryable)
		}
		a = got
	}
	return f(ctx, a)
}

// failed keeps the record of a call that failed (not done: Partial) if
// its target exists, and drops it if not: nothing was made there, so the
// plugin was not asked (the Mounter and Node create a target's directory
// before they ask).
func (m *Mounter) failed(t target, err error) error {
	if _, lerr := os.Lstat(t.path); errors.Is(lerr, fs.ErrNotExist) {
		return errors.Join(err, m.st.set(t.rel, nil))
	}
	return err
}

// Stage implements mount.Mounter: NodeStageVolume of the target's volume
// at target, with the publish context source (the controller's device
// path) carries.
func (m *Mounter) Stage(source, path string) error {
	t, err := m.parse(kindStage, path)
	if err != nil {
		return err
	}
	if err := mount.MakeParents(m.layout, t.path); err != nil {
		return err
	}
	r := record{Kind: kindStage, Volume: t.vol, Device: source}
	if err := m.st.set(t.rel, &r); err != nil {
		return err
	}
	err = m.call(t.vol, source, func(ctx context.Context, a cloudcsi.Access) error {
		if err := m.node.Stage(ctx, t.vol, source, t.path, a); err != nil {
			return err
		}
		if !m.node.StagesVolumes() {
			return mkdir("keep staging directory", t.path) // for the scan: the volume is "staged"
		}
		return nil
	})
	if err != nil {
		return m.failed(t, err)
	}
	r.Done = true
	return m.st.set(t.rel, &r)
}

// Publish implements mount.Mounter: NodePublishVolume of the target's
// volume at target from staged, which must be the volume's staging path,
// staged by this Mounter (its record holds the publish context). A
// target published with the other read-only flag is unpublished first.
func (m *Mounter) Publish(staged, path string, readOnly bool) error {
	t, err := m.parse(kindPublish, path)
	if err != nil {
		return err
	}
	s, err := m.parse(kindStage, staged)
	if err != nil {
		return err
	}
	sr, ok := m.st.get(s.rel)
	if s.vol != t.vol || !ok || !sr.Done {
		return fmt.Errorf("csi: publish %s at %s: volume %s is not staged at %s: %w", t.vol, t.path, t.vol, s.path, cloud.ErrRetryable)
	}
	if old, ok := m.st.get(t.rel); ok && old.Done && old.ReadOnly != readOnly {
		if err := m.Unpublish(t.path); err != nil {
			return err
		}
	}
	if err := mount.MakeParents(m.layout, t.path); err != nil {
		return err
	}
	r := record{Kind: kindPublish, Volume: t.vol, ReadOnly: readOnly}
	if err := m.st.set(t.rel, &r); err != nil {
		return err
	}
	err = m.call(t.vol, sr.Device, func(ctx context.Context, a cloudcsi.Access) error {
		return m.node.Publish(ctx, t.vol, sr.Device, s.path, t.path, readOnly, a)
	})
	if err != nil {
		return m.failed(t, err)
	}
	r.Done = true
	return m.st.set(t.rel, &r)
}

// Unpublish implements mount.Mounter: NodeUnpublishVolume (which removes
// the target: Node.Unpublish removes what the plugin left, directory or a
// block volume's device file), then the record goes, then the workload's
// directories once empty (mount.CleanEmptyParents up to pods/, which
// stays), as every mount.Mounter's Unpublish.
func (m *Mounter) Unpublish(path string) error {
	t, err := m.parse(kindPublish, path)
	if err != nil {
		return err
	}
	if err := m.undo(t, func(ctx context.Context) error { return m.node.Unpublish(ctx, t.vol, t.path) }); err != nil {
		return err
	}
	return mount.CleanEmptyParents(m.layout, t.path, filepath.Join(m.layout.Root(), layout.PodsDir))
}

// Unstage implements mount.Mounter: NodeUnstageVolume (which removes the
// staging directory; the Mounter removes the one it kept for a plugin
// that does not stage), then the record goes.
func (m *Mounter) Unstage(path string) error {
	t, err := m.parse(kindStage, path)
	if err != nil {
		return err
	}
	return m.undo(t, func(ctx context.Context) error {
		if err := m.node.Unstage(ctx, t.vol, t.path); err != nil {
			return err
		}
		return removeDir("remove staging directory", t.path)
	})
}

// undo marks t's record not done, runs f, and removes the record.
func (m *Mounter) undo(t target, f func(context.Context) error) error {
	if r, ok := m.st.get(t.rel); ok && r.Done {
		r.Done = false
		if err := m.st.set(t.rel, &r); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	if err := f(ctx); err != nil {
		return err
	}
	return m.st.set(t.rel, nil)
}

// Inspect implements mount.Mounter from the records: Absent where there
// is nothing (no directory, no block volume's device file); Mounted where the plugin's call is recorded done (the
// source is the device path for a stage, the staging path for a
// publish); Partial anywhere else (a call in flight, failed or
// interrupted, a record of an earlier boot, or a directory with no record).
// A path that is no target of the plugin is Partial if it exists: the
// Mounter never made it.
func (m *Mounter) Inspect(path string) (mount.State, string, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return mount.Absent, "", nil
	} else if err != nil {
		return mount.Partial, "", fmt.Errorf("csi: inspect %s: %w", path, err)
	}
	t, err := m.parse(kindStage, path)
	if err != nil {
		if t, err = m.parse(kindPublish, path); err != nil {
			return mount.Partial, "", nil
		}
	}
	r, ok := m.st.get(t.rel)
	if !ok || !r.Done || r.Kind != t.kind || r.Volume != t.vol {
		return mount.Partial, "", nil
	}
	if t.kind == kindStage {
		return mount.Mounted, r.Device, nil
	}
	staged, err := m.layout.GlobalMount(m.plugin, string(t.vol))
	if err != nil {
		return mount.Partial, "", nil
	}
	return mount.Mounted, staged, nil
}
