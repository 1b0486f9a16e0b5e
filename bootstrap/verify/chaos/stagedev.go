package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// stageDeviceTimeout bounds one node's reading of the cloud's devices
// and resolution of each one (stageDevices).
const stageDeviceTimeout = 5 * time.Second

// stageDevices checks the device under every stage on every node (I5,
// once nothing moves any more): what is really mounted at the stage path
// must be the volume's CURRENT device, as the cloud's real attachment
// says: the device path the cloud gives the volume on the node's
// instance now, resolved as the node's agent resolves it (the sim's
// content directory, the loop device bound to the volume's image). A
// stage left on a device the cloud has since taken away (a console
// detach, then a re-attach at another device), or made from a device
// path that belonged to another volume, fails it, even where every
// mount the workloads want is in place.
// It counts the stages it checked in the report (the last call's).
func (r *runner) stageDevices() []Violation {
	var out []Violation
	checked := 0
	for _, n := range r.e.NodeNames {
		m, err := r.e.Mounter(n)
		if err != nil {
			out = append(out, Violation{Node: n, Detail: err.Error()})
			continue
		}
		bad, k := checkStageDevices(n, r.e.NodeDir(n), m, r.acct, r.acct.Devices(n))
		out, checked = append(out, bad...), checked+k
	}
	r.rep.StagesChecked = checked
	return out
}

// devicesOf is what stageDevices asks of the cloud.
type devicesOf interface {
	InstanceOf(n cloud.NodeName) (cloud.InstanceID, bool)
	InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error)
}

// checkStageDevices checks node n's stages under dir (mounted with m)
// against the devices the cloud gives their volumes on n's instance now,
// resolved by devs, and counts the stages checked.
func checkStageDevices(n cloud.NodeName, dir string, m mount.Mounter, c devicesOf, devs agent.Devices) ([]Violation, int) {
	l, err := layout.New(dir)
	if err != nil {
		return []Violation{{Node: n, Detail: err.Error()}}, 0
	}
	found, err := mount.Scan(l, m)
	if err != nil {
		return []Violation{{Node: n, Detail: err.Error()}}, 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), stageDeviceTimeout)
	defer cancel()
	var current map[cloud.VolumeID]string
	if inst, ok := c.InstanceOf(n); ok {
		all, err := c.InstanceVolumes(ctx, []cloud.InstanceID{inst})
		if err != nil {
			return []Violation{{Node: n, Detail: "the cloud's devices: " + err.Error()}}, 0
		}
		current = all[inst]
	}
	var out []Violation
	checked := 0
	for _, e := range found.Entries {
		if e.Kind != mount.KindStage || e.State != mount.Mounted {
			continue // a stage not in place is judged by the mounts' diff
		}
		checked++
		vol := cloud.VolumeID(e.Volume)
		if bad := stageDevice(ctx, e.Path, vol, current, devs); bad != "" {
			out = append(out, Violation{Volume: vol, Node: n, Detail: fmt.Sprintf("stage of %s on %s: %s", vol, n, bad)})
		}
	}
	return out, checked
}

// stageDevice says what is wrong with the device under the stage at
// path, or "".
func stageDevice(ctx context.Context, path string, vol cloud.VolumeID, current map[cloud.VolumeID]string, devs agent.Devices) string {
	dev, ok := current[vol]
	if !ok {
		return "the volume has no current device on the node's instance (not attached there)"
	}
	src, release, err := devs.Source(ctx, vol, dev)
	if err != nil {
		return fmt.Sprintf("its current device %s does not resolve: %v", dev, err)
	}
	defer release()
	same, shows, err := showsSource(path, src)
	switch {
	case err != nil:
		return fmt.Sprintf("the device under it: %v", err)
	case !same:
		return fmt.Sprintf("shows %s, not the volume's current device %s (%s)", shows, dev, src)
	}
	return ""
}

// staleDevices breaks I5 in the agents' wiring (Break "I5-device"): it
// remembers the source each device path first resolved to on its node
// and stages from that ever after, as an agent whose device cache is
// never invalidated would. Once the cloud gives the path to another
// volume (device paths are reused after a detach, a console detach
// among them), that volume's stage shows the first one's disk.
type staleDevices struct {
	agent.Devices
	mu   sync.Mutex
	seen map[string]string // device path -> the source it first resolved to
}

func (d *staleDevices) Source(ctx context.Context, vol cloud.VolumeID, device string) (string, func(), error) {
	d.mu.Lock()
	src, ok := d.seen[device]
	d.mu.Unlock()
	if ok {
		return src, func() {}, nil
	}
	src, release, err := d.Devices.Source(ctx, vol, device)
	if err == nil {
		d.mu.Lock()
		if d.seen == nil {
			d.seen = map[string]string{}
		}
		d.seen[device] = src
		d.mu.Unlock()
	}
	return src, release, err
}
