package mount

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/node/layout"
)

// block stages block devices (an ext4 filesystem mounted with mount(2))
// and publishes them with the bind mounter's bind mounts. It needs
// CAP_SYS_ADMIN, blkid (util-linux), mkfs.ext4 and e2fsck (e2fsprogs).
type block struct {
	l    layout.Layout
	bind bind
	run  Runner
}

// NewBlock returns a Mounter of block devices.
//
// Stage's source is a block device (its path, not a symlink to it, nor
// reached through one). The device is probed (blkid -p) before anything
// is written: blank, it is formatted ext4 once (mkfs.ext4); ext4, it is
// checked (e2fsck -p) and never formatted again; anything else (another
// filesystem, a partition table, several signatures) is refused with
// ErrForeignContent, touching nothing. Then it is mounted as ext4 on the
// target. A device the kernel marks read-only (as every device of a
// ReadOnlyMany disk of the loop cloud) is never written: blank, it is
// refused (ErrUnformattedReadOnly); ext4, it is mounted read-only without
// a check, and without loading its journal if that needs replaying
// (noload), which no read-only device can do. A device mounted elsewhere
// is refused (ErrDeviceInUse), one another program has open exclusively
// (a tool left running, a mount in another namespace) too, with
// ErrDeviceBusy: that one clears by itself. A target that shows the
// device already is a success, one that shows anything else ErrConflict.
//
// Publish bind-mounts the staged target, which must be a mount, as the
// bind mounter does (read-only enforced). Unstage and Unpublish unmount
// and remove the directory; a mount in use is left mounted and reported
// with ErrBusy, never forced or detached lazily.
//
// Inspect reports a stage's source as the device path the mount table
// shows (the one given to Stage), and a publish's (a target under the
// pods directory) as the bind mounter does: the stage it shows.
func NewBlock(l layout.Layout, opts ...BlockOption) Mounter {
	c := newBlockConfig(opts)
	return block{l: l, bind: bind{l: l}, run: c.run}
}

func (block) Name() string { return "block" }

// device is a checked block device: its clean absolute path and number.
type device struct {
	path string
	num  uint64
}

// id is the device's number as the mount table writes it.
func (d device) id() string { return fmt.Sprintf("%d:%d", unix.Major(d.num), unix.Minor(d.num)) }

func (b block) Stage(source, target string) error {
	op := newOp(OpStage)
	defer op.done()
	target, err := checkTarget(b.l, op, target)
	if err != nil {
		return err
	}
	p, err := checkParents(b.l, op, target)
	if err != nil {
		return err
	}
	dev, err := checkBlockDevice(op, source)
	if err != nil {
		return err
	}
	mounted, absent, err := targetState(op, p, target)
	if err != nil {
		return fmt.Errorf("mount: %s: %w", op, err)
	}
	if done, err := b.staged(op, dev, target, mounted); done || err != nil {
		return err
	}
	act, err := b.plan(op, dev)
	if err != nil {
		return err
	}
	// The target is made only now: a refused device leaves nothing behind.
	if err := b.bind.prepare(op, target, p, absent); err != nil {
		return err
	}
	if err := b.ready(dev, act); err != nil {
		return err
	}
	flags, data, opts := uintptr(0), "", "ext4"
	if act == actReadOnly {
		replay, err := readSuperblock(dev.path)
		if err != nil {
			return err
		}
		flags, data = unix.MS_RDONLY, readOnlyData(replay)
		opts = strings.TrimSuffix("ext4, ro,"+data, ",")
	}
	if err := unix.Mount(dev.path, target, "ext4", flags, data); err != nil {
		return fmt.Errorf("mount: %s: mount %s (%s) on %q: %w", op, dev.path, opts, target, err)
	}
	return nil
}

// readSuperblock reads the ext4 superblock of the device at path and
// says whether its journal needs replaying (needsRecovery).
func readSuperblock(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("mount: stage: %w", err)
	}
	defer f.Close()
	sb := make([]byte, sbSize)
	if _, err := f.ReadAt(sb, sbOffset); err != nil {
		return false, fmt.Errorf("mount: stage: reading the superblock of %s: %w", path, err)
	}
	return needsRecovery(path, sb)
}

// checkBlockDevice returns source made absolute and clean if it is a block
// device reached through no symlink: a symlink is ErrUnsafeSource (the
// mount table would name another path than the one the caller knows, and
// a planted one would have a workload's volume formatted elsewhere),
// anything but a block device ErrNotBlockDevice.
func checkBlockDevice(op fmt.Stringer, source string) (device, error) {
	if source == "" {
		return device{}, fmt.Errorf("mount: %s: empty source", op)
	}
	abs, err := filepath.Abs(source)
	if err != nil {
		return device{}, fmt.Errorf("mount: %s: source %q: %w", op, source, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(abs, &st); err != nil {
		return device{}, fmt.Errorf("mount: %s: source: %w", op, &fs.PathError{Op: "lstat", Path: abs, Err: err})
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
	case unix.S_IFLNK:
		return device{}, fmt.Errorf("mount: %s: source %q is a symlink: %w", op, abs, ErrUnsafeSource)
	default:
		return device{}, fmt.Errorf("mount: %s: source %q is a %s: %w", op, abs, fileType(st.Mode), ErrNotBlockDevice)
	}
	dir := filepath.Dir(abs)
	if resolved, err := filepath.EvalSymlinks(dir); err != nil || resolved != dir {
		return device{}, fmt.Errorf("mount: %s: source %q is reached through a symlink (%s): %w", op, abs, resolved, ErrUnsafeSource)
	}
	return device{path: abs, num: st.Rdev}, nil
}

// fileType names a stat mode's file type for an error.
func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFIFO:
		return "named pipe"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFREG:
		return "regular file"
	}
	return fmt.Sprintf("file of type %#o", mode&unix.S_IFMT)
}

// staged reports whether target, mounted as the kernel says, already
// shows dev (done, nil), or shows something else (ErrConflict). When
// target is not mounted it checks that dev is not mounted elsewhere
// (ErrDeviceInUse): a mounted filesystem must be neither checked nor
// formatted.
func (b block) staged(op *opc, dev device, target string, mounted bool) (done bool, err error) {
	if mounted && showsRootOf(target, dev) {
		return true, nil
	}
	t, err := readBlockMounts()
	if err != nil {
		return false, fmt.Errorf("mount: %s: %w", op, err)
	}
	if mounted {
		shown := "unknown"
		if point, _ := tablePoint(op, target); point != "" {
			if m, ok := t.top(point); ok {
				shown = fmt.Sprintf("%s %s (root %s)", m.FSType, m.Source, m.Root)
			}
		}
		return false, fmt.Errorf("mount: %s %q: shows %s, not %s: %w", op, target, shown, dev.path, ErrConflict)
	}
	if points := t.pointsOf(dev.id()); len(points) > 0 {
		return false, fmt.Errorf("mount: %s: %s is mounted at %q: not checked or mounted again: %w", op, dev.path, points, ErrDeviceInUse)
	}
	return false, nil
}

// showsRootOf reports whether the directory at target is the root of the
// filesystem on dev (ext4's root directory is inode 2): the test for
// "target already shows the device".
func showsRootOf(target string, dev device) bool {
	const ext4RootIno = 2
	var st unix.Stat_t
	return unix.Lstat(target, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR &&
		st.Dev == dev.num && st.Ino == ext4RootIno
}

// plan probes dev and decides (planStage). It first checks that dev can
// be opened and has a size: blkid says "nothing found" for a device it
// cannot open, and a detached loop device or an empty drive reads as
// blank.
func (b block) plan(op *opc, dev device) (stageAction, error) {
	// Before anything reads it: a device another program holds may be
	// being written (an mkfs.ext4 half done reads as blank, or foreign).
	if err := checkNotHeld(dev.path); err != nil {
		return 0, err
	}
	size, readOnly, err := deviceInfo(dev.path)
	if err != nil {
		return 0, fmt.Errorf("mount: %s: %w", op, err)
	}
	if size == 0 {
		return 0, fmt.Errorf("mount: %s: %s has no size (no medium, or a loop device without a file)", op, dev.path)
	}
	out, err := b.run("blkid", blkidArgs(dev.path)...)
	if err != nil {
		return 0, err
	}
	p, err := parseBlkid(dev.path, out)
	if err != nil {
		return 0, err
	}
	return planStage(dev.path, p, readOnly)
}

// deviceInfo opens path read-only and asks its size in bytes (a seek to
// its end, which block devices answer with their size) and whether the
// kernel has it read-only (BLKROGET: a loop device bound read-only, a
// write-protected disk).
func deviceInfo(path string) (size int64, readOnly bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	if size, err = f.Seek(0, io.SeekEnd); err != nil {
		return 0, false, err
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var ro int
	var ioErr error
	if err := raw.Control(func(fd uintptr) { ro, ioErr = unix.IoctlGetInt(int(fd), unix.BLKROGET) }); err != nil {
		return 0, false, err
	}
	if ioErr != nil {
		return 0, false, fmt.Errorf("read-only flag of %s: %w", path, ioErr)
	}
	return size, ro != 0, nil
}

// ready formats a blank device or checks an ext4 one; a read-only one
// is left as it is. The device is checked again for another program
// holding it just before the tool runs: whatever takes it after that
// makes the tool refuse it, read by the verdicts as ErrDeviceBusy too.
func (b block) ready(dev device, act stageAction) error {
	if act == actReadOnly {
		return nil
	}
	if err := checkNotHeld(dev.path); err != nil {
		return err
	}
	if act == actCheck {
		out, err := b.run("e2fsck", fsckArgs(dev.path)...)
		if err != nil {
			return err
		}
		return fsckVerdict(dev.path, out)
	}
	out, err := b.run("mkfs.ext4", mkfsArgs(dev.path)...)
	if err != nil {
		return err
	}
	return mkfsVerdict(dev.path, out)
}

// Publish binds staged, which must be a mount (a stage that is not would
// show the node's own disk to the workload), on target.
func (b block) Publish(staged, target string, readOnly bool) error {
	op := newOp(OpPublish)
	defer op.done()
	if _, err := checkTarget(b.l, op, target); err != nil {
		return err
	}
	if staged != "" {
		abs, err := filepath.Abs(staged)
		if err != nil {
			return fmt.Errorf("mount: %s: staged %q: %w", op, staged, err)
		}
		if mounted, err := isMountPoint(op, abs); err == nil && !mounted {
			return fmt.Errorf("mount: %s: staged %q is not mounted: stage it first", op, abs)
		}
	}
	return b.bind.mount(op, staged, target, readOnly, true)
}

func (b block) Unstage(target string) error {
	op := newOp(OpUnstage)
	defer op.done()
	return b.unmount(op, target, false)
}

func (b block) Unpublish(target string) error {
	op := newOp(OpUnpublish)
	defer op.done()
	return b.unmount(op, target, true)
}

// unmount is the bind mounter's unmount without its lazy detach: a busy
// mount stays and the error wraps ErrBusy (and EBUSY).
// pod: an unpublish, which also removes the workload's directories once
// empty (see Mounter.Unpublish).
func (b block) unmount(op *opc, target string, pod bool) error {
	clean, err := checkTarget(b.l, op, target)
	if err != nil {
		return err
	}
	if err := unmountAll(b.l, op, clean, false); err != nil {
		return err
	}
	return cleanPod(b.l, op, clean, pod)
}

func (b block) Inspect(target string) (State, string, error) {
	return b.inspect(target, b.bind.Inspect, nil)
}

// inspector returns Inspect for one Scan: publishes share the bind
// mounter's table, stages one read of the mount table made at the first
// stage inspected (after the call).
func (b block) inspector() func(string) (State, string, error) {
	pub, shared := b.bind.inspector(), &blockView{}
	return func(target string) (State, string, error) { return b.inspect(target, pub, shared) }
}

// inspect is Inspect with publishes inspected by pub and stages named
// from shared's table (nil: a table read after this call began).
func (b block) inspect(target string, pub inspectFunc, shared *blockView) (State, string, error) {
	op := newOp(OpInspect)
	defer op.done()
	target, err := checkTarget(b.l, op, target)
	if err != nil {
		return Absent, "", err
	}
	if below(filepath.Join(b.l.Root(), layout.PodsDir), target) {
		return pub(target)
	}
	fresh := &blockView{}
	if shared == nil {
		shared = fresh
	}
	if st, done, err := unmountedState(op, target); done {
		return st, "", err
	}
	m, listed, err := shared.top(op, target)
	if err == nil && !listed && shared != fresh {
		m, listed, err = fresh.top(op, target) // the shared table may be older than the mount
	}
	if err != nil {
		return Absent, "", fmt.Errorf("mount: inspect: %w", err)
	}
	if !listed {
		if st, done, err := unmountedState(op, target); done {
			return st, "", err
		}
		return Mounted, "", nil
	}
	if dev, ok := m.shows(); ok {
		return Mounted, dev, nil
	}
	return b.bind.Inspect(target) // not a block stage: named as a bind mount
}

// blockView is one read of the mount table, made on first use and then
// kept.
type blockView struct {
	once sync.Once
	t    blockTable
	err  error
}

// top returns the mount visible at target, as the table names it.
func (v *blockView) top(op *opc, target string) (blockMount, bool, error) {
	point, err := tablePoint(op, target)
	if err != nil || point == "" {
		return blockMount{}, false, err
	}
	v.once.Do(func() { v.t, v.err = readBlockMounts() })
	if v.err != nil {
		return blockMount{}, false, v.err
	}
	m, ok := v.t.top(point)
	return m, ok, nil
}

// readBlockMounts reads this process's mount table with the filesystem
// types and sources (which the package's shared table leaves out).
func readBlockMounts() (blockTable, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseBlockMounts(f)
}
