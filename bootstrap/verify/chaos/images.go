package chaos

import (
	"errors"

	"github.com/tether/tether/cloud"
)

// CheckImages makes the checker judge which disk each mount shows, on
// the loop cloud (image says where a volume's image file is). When a
// stage or publish leaves a mount, the goroutine that made it reads at
// once, before anything else can move that target (the agent serializes
// operations per target), the device the mount table shows there
// (/proc/self/mountinfo) and the image file the kernel shows that loop
// device bound to (/sys/dev/block/MAJ:MIN/loop/backing_file), and records
// it with the mount's end. A mounted loop device is pinned to its image
// while the mount lasts, so the reading is the truth at that stamp,
// whatever the load. A mount of any device but one bound to the volume's
// own image is I3: a device path trusted without a check (another
// volume's disk, or a device the cloud released).
func (c *Checker) CheckImages(image func(cloud.VolumeID) (string, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.images = image
}

// imageCheck returns CheckImages's function, or nil.
func (c *Checker) imageCheck() func(cloud.VolumeID) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.images
}

// errNotInTable: the mount table shows nothing at the target.
var errNotInTable = errors.New("chaos: no mount at the target in /proc/self/mountinfo")

// readImages fills r's want (the volume's image) and held (the image of
// the device mounted at r.target) for CheckImages; what it cannot read
// goes to r.text, and held stays empty.
func (c *Checker) readImages(r *record) {
	image := c.imageCheck()
	if image == nil {
		return
	}
	want, err := image(r.vol)
	if err != nil {
		r.text = "the volume's image: " + err.Error()
		return
	}
	r.want = want
	held, err := mountedImage(r.target)
	if err != nil {
		r.text = "the image mounted at the target: " + err.Error()
		return
	}
	r.held = held
}

// onImage judges which disk a mount shows (Checker.CheckImages): a stage
// or publish must show a device bound to the volume's own image file,
// else it mounted a device path nobody checked (I3). A reading that
// failed is noted, not judged.
func (j *judge) onImage(r record) {
	switch {
	case r.want == "" && r.text == "":
		// No image check (the sim).
	case r.held == "":
		j.note(r, r.vol, "%s on %s: disk not checked: %s", r.op, r.node, r.text)
	case r.held != r.want:
		j.diskChecks++
		j.violate(r, "I3", r.vol, r.node, "%s mounted a device bound to %s, not to the volume's image %s", r.op, r.held, r.want)
	default:
		j.diskChecks++
	}
}
