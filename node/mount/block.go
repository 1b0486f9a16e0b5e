package mount

import "errors"

// Errors wrapped by the block mounter (NewBlock), for callers that
// classify. Only ErrBusy and ErrDeviceBusy may clear by themselves, when
// the program holding the mount or the device lets go (retry them with
// backoff); the others need someone to act.
var (
	// ErrBusy: an unmount was refused because a process still uses the
	// mount (an open file, a working directory). The mount is left as it
	// was: never forced, never detached lazily. Retry later.
	ErrBusy = errors.New("mount: target busy: a process still uses it")
	// ErrForeignContent: the device holds a partition table or a
	// filesystem (or other signature) that is not ext4. Nothing was done:
	// a device with content is never reformatted.
	ErrForeignContent = errors.New("mount: device holds another filesystem or a partition table: never reformatted")
	// ErrNotBlockDevice: a stage's source is not a block device.
	ErrNotBlockDevice = errors.New("mount: source is not a block device")
	// ErrDeviceInUse: the device is already mounted somewhere other than
	// the target. Nothing was done: it is neither checked nor formatted
	// nor mounted again.
	ErrDeviceInUse = errors.New("mount: device is mounted elsewhere")
	// ErrDeviceBusy: another program has the device open exclusively (a
	// tool still running, such as the e2fsck or mkfs.ext4 of a stage whose
	// process was killed; or a mount in another mount namespace). Nothing
	// was done: it is neither checked nor formatted nor mounted. It clears
	// when that program lets go: retry later. Never ErrNeedsFsck: nothing
	// is known to be wrong with the filesystem.
	ErrDeviceBusy = errors.New("mount: device busy: another program has it open exclusively")
	// ErrNeedsFsck: e2fsck -p found errors it may not fix on its own (or
	// fixed them and asked for a reboot). Nothing was mounted; an
	// operator must run e2fsck on the device by hand.
	ErrNeedsFsck = errors.New("mount: filesystem needs a manual e2fsck")
	// ErrUnformattedReadOnly: the device is read-only and holds no
	// filesystem. Nothing was done: a read-only device is never
	// formatted (it cannot be written); its disk must be made with its
	// filesystem on it.
	ErrUnformattedReadOnly = errors.New("mount: device is read-only and holds no filesystem: a read-only device is never formatted")
)

// ToolOutput is what one run of an external tool returned.
type ToolOutput struct {
	Stdout, Stderr []byte
	Exit           int
}

// Runner runs an external tool (blkid, mkfs.ext4, e2fsck) with its
// standard input empty and returns its output and exit status. It returns
// an error only when the tool did not run to an exit status (not found,
// killed by a signal): an exit status other than 0 is not an error here.
type Runner func(name string, args ...string) (ToolOutput, error)

// BlockOption configures NewBlock.
type BlockOption func(*blockConfig)

type blockConfig struct {
	run Runner
}

// WithRunner makes the block mounter run its tools with r instead of
// os/exec (which finds them on PATH, then in /usr/sbin and /sbin): for an
// agent that must run them in the host's namespaces (nsenter), or that
// records them. A nil r keeps the default.
func WithRunner(r Runner) BlockOption {
	return func(c *blockConfig) {
		if r != nil {
			c.run = r
		}
	}
}
