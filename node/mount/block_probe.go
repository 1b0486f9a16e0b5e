package mount

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// The block mounter's decisions, as pure functions of what its tools and
// the mount table said: what a device holds (blkid), what to do about it,
// whether e2fsck's answer allows a mount, and which mount a mount point
// shows. The shell (block_linux.go) runs the tools and the system calls.

// The commands. mkfs.ext4 gets no -F: a single -F would let it format
// what it otherwise refuses, two a mounted device. It gets no option that
// keeps it from overwriting a signature either, because it has none: off a
// terminal it overwrites whatever it finds without asking. The probe before
// it is the only guard (see planStage).
func blkidArgs(dev string) []string { return []string{"-p", "-o", "export", "--", dev} }
func mkfsArgs(dev string) []string  { return []string{"-q", "-m", "0", "--", dev} }
func fsckArgs(dev string) []string  { return []string{"-p", "--", dev} }

// Exit statuses of blkid -p (blkid(8)).
const (
	blkidNothing    = 2 // no signature found
	blkidAmbivalent = 8 // several signatures that exclude one another
)

// probe is what blkid -p found on a device.
type probe struct {
	Blank      bool   // no signature at all
	Type       string // TYPE: a filesystem or other content (swap, crypto_LUKS, LVM2_member...)
	PTType     string // PTTYPE: a partition table
	UUID       string
	Ambivalent bool // several signatures
}

// parseBlkid reads the output of blkid -p -o export. blkid also exits
// with "nothing found" when it cannot open the device, saying nothing (or,
// in some versions, a warning): a "nothing found" with anything on
// standard error is an error, never a blank device.
func parseBlkid(dev string, out ToolOutput) (probe, error) {
	switch out.Exit {
	case 0:
	case blkidNothing:
		if msg := strings.TrimSpace(string(out.Stderr)); msg != "" {
			return probe{}, fmt.Errorf("mount: stage: blkid -p %s found nothing but said %q", dev, msg)
		}
		return probe{Blank: true}, nil
	case blkidAmbivalent:
		return probe{Ambivalent: true}, nil
	default:
		return probe{}, fmt.Errorf("mount: stage: blkid -p %s exited %d: %s", dev, out.Exit, toolMessage(out))
	}
	var p probe
	for line := range strings.SplitSeq(string(out.Stdout), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "TYPE":
			p.Type = v
		case "PTTYPE":
			p.PTType = v
		case "UUID":
			p.UUID = v
		}
	}
	return p, nil
}

// stageAction is what a stage does to a device before mounting it.
type stageAction int

const (
	actFormat   stageAction = iota // mkfs.ext4: the device is blank
	actCheck                       // e2fsck -p: the device holds ext4
	actReadOnly                    // nothing: a read-only device with ext4, mounted read-only
)

// planStage decides from a probe and the kernel's read-only flag of the
// device: a blank device is formatted, an ext4 one checked, anything else
// refused (ErrForeignContent). A read-only device is never written: its
// ext4 is mounted read-only unchecked (e2fsck could repair nothing on it;
// Kubernetes checks no read-only disk either), and a blank one is refused
// (ErrUnformattedReadOnly) rather than handed to a mkfs.ext4 that could
// only fail. Between the probe and mkfs.ext4 there is a window in which a
// writer could put a signature on the device; mke2fs refuses a device
// that is mounted or opened exclusively (and so does the stage itself,
// before the probe and again before the tool: see checkNotHeld), so only
// a raw writer fits in it, and the node agent is the only writer of a
// device attached for a volume, one operation per volume at a time.
func planStage(dev string, p probe, readOnly bool) (stageAction, error) {
	var holds string
	switch {
	case p.Ambivalent:
		holds = "several signatures"
	case p.PTType != "":
		holds = fmt.Sprintf("a partition table (%s)", p.PTType)
	case p.Type == "ext4" && readOnly:
		return actReadOnly, nil
	case p.Type == "ext4":
		return actCheck, nil
	case p.Type != "":
		holds = fmt.Sprintf("a %s signature", p.Type)
	case p.Blank && readOnly:
		return 0, fmt.Errorf("mount: stage: %s: %w (its disk must be made with its filesystem on it, as tether's ReadOnlyMany disks are)", dev, ErrUnformattedReadOnly)
	case p.Blank:
		return actFormat, nil
	default:
		holds = "a signature blkid does not name"
	}
	return 0, fmt.Errorf("mount: stage: %s holds %s: %w", dev, holds, ErrForeignContent)
}

// The ext4 superblock, as far as a read-only mount needs it: 1024 bytes
// at offset 1024, little-endian (ext4's on-disk layout).
const (
	sbOffset        = 1024
	sbSize          = 1024
	sbMagicAt       = 0x38 // s_magic, 16 bits
	sbIncompatAt    = 0x60 // s_feature_incompat, 32 bits
	ext4Magic       = 0xEF53
	incompatRecover = 0x4 // EXT4_FEATURE_INCOMPAT_RECOVER: the journal needs replaying
)

// needsRecovery reads an ext4 superblock (sbSize bytes from sbOffset of
// dev): whether its journal must be replayed, as after a crash of a
// read-write mount. The kernel refuses to mount such a filesystem from a
// read-only device (replaying writes) unless told not to load the
// journal (noload): what it then shows is the filesystem as of its last
// checkpoint.
func needsRecovery(dev string, sb []byte) (bool, error) {
	if len(sb) < sbSize || binary.LittleEndian.Uint16(sb[sbMagicAt:]) != ext4Magic {
		return false, fmt.Errorf("mount: stage: %s: no ext4 superblock at offset %d", dev, sbOffset)
	}
	return binary.LittleEndian.Uint32(sb[sbIncompatAt:])&incompatRecover != 0, nil
}

// readOnlyData is the mount data of a read-only stage: noload when the
// journal needs replaying, which a read-only device cannot do.
func readOnlyData(replay bool) string {
	if replay {
		return "noload"
	}
	return ""
}

// e2fsck's exit status for an operational error (e2fsck(8)), among
// them its own exclusive open of the device failing.
const fsckOperational = 8

// fsckVerdict reads the exit status of e2fsck -p (a sum of flags, see
// e2fsck(8)): 0 (clean) and 1 (errors corrected) allow a mount. 2 (errors
// corrected, reboot asked) only happens on a mounted filesystem, which a
// stage never checks: something else has it, so it is refused too. 4 and
// above (errors left, operational error, cancelled) need an operator, but
// for one operational error: "<dev> is in use.", e2fsck's word for an
// exclusive open that failed, which says nothing of the filesystem. The
// stage finds a device held elsewhere before it runs e2fsck (see
// checkNotHeld); this is the fallback for a program that takes the
// device in between, and it is ErrDeviceBusy too, never ErrNeedsFsck.
func fsckVerdict(dev string, out ToolOutput) error {
	if out.Exit&^1 == 0 {
		return nil
	}
	if out.Exit == fsckOperational && said(out, dev+" is in use.") {
		return deviceBusy(dev, fmt.Sprintf("e2fsck -p exited %d: %s", out.Exit, toolMessage(out)))
	}
	what := "found errors it may not fix on its own"
	if out.Exit < 4 {
		what = "corrected errors and asks for a reboot"
	}
	return fmt.Errorf("mount: stage: e2fsck -p %s exited %d (%s): %s; nothing mounted: run e2fsck %s by hand: %w",
		dev, out.Exit, what, toolMessage(out), dev, ErrNeedsFsck)
}

// mkfsVerdict reads the exit status of mkfs.ext4: 0 is success. mke2fs
// refuses a device its exclusive open fails on ("<dev> is apparently in
// use by the system"), writing nothing: like e2fsck's "in use", the
// fallback for a program that takes the device after the stage's own
// check, and ErrDeviceBusy.
func mkfsVerdict(dev string, out ToolOutput) error {
	switch {
	case out.Exit == 0:
		return nil
	case said(out, dev+" is apparently in use by the system"):
		return deviceBusy(dev, fmt.Sprintf("mkfs.ext4 exited %d: %s", out.Exit, toolMessage(out)))
	}
	return fmt.Errorf("mount: stage: mkfs.ext4 %s exited %d: %s", dev, out.Exit, toolMessage(out))
}

// deviceBusy is a stage's error for a device another program has open
// exclusively; how says how the stage found out.
func deviceBusy(dev, how string) error {
	return fmt.Errorf("mount: stage: %s is in use by another program (%s): nothing checked, formatted or mounted; it clears when that program lets go, retry later: %w",
		dev, how, ErrDeviceBusy)
}

// said reports whether a tool wrote s, on either output.
func said(out ToolOutput, s string) bool {
	return strings.Contains(string(out.Stdout), s) || strings.Contains(string(out.Stderr), s)
}

// toolMessage is what a tool said, stderr first, on one line, for an
// error.
func toolMessage(out ToolOutput) string {
	msg := strings.TrimSpace(string(out.Stderr) + "\n" + string(out.Stdout))
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 400 {
		msg = msg[:400] + "..."
	}
	if msg == "" {
		return "no message"
	}
	return msg
}

// blockMount is one line of /proc/<pid>/mountinfo with the fields the
// package's table leaves out: the filesystem type and the mount source
// (for a block filesystem, the device path given to mount(2)).
type blockMount struct {
	Dev    string // "major:minor"
	Root   string
	Point  string
	FSType string
	Source string
}

// blockTable is a mount table in the kernel's order (of two mounts on one
// point, the later is on top).
type blockTable []blockMount

// parseBlockMounts reads mountinfo lines: six fields, optional fields up
// to a lone "-", then the filesystem type and the source. Paths are
// unescaped as parseMountinfo does.
func parseBlockMounts(r io.Reader) (blockTable, error) {
	var t blockTable
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		var f [][]byte
		for line := sc.Bytes(); ; {
			var fl []byte
			if fl, line = field(line); fl == nil {
				break
			}
			f = append(f, fl)
		}
		if len(f) == 0 {
			continue
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if string(f[i]) == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(f) {
			return nil, fmt.Errorf("mount: mountinfo line %d: no filesystem type and source after the separator", n)
		}
		t = append(t, blockMount{
			Dev: string(f[2]), Root: unescaped(f[3]), Point: unescaped(f[4]),
			FSType: string(f[sep+1]), Source: unescaped(f[sep+2]),
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mount: mountinfo: %w", err)
	}
	return t, nil
}

func unescaped(b []byte) string {
	var s strings.Builder
	appendUnescaped(&s, b)
	return s.String()
}

// top returns the mount visible at point (the last one listed there).
func (t blockTable) top(point string) (blockMount, bool) {
	for i := len(t) - 1; i >= 0; i-- {
		if t[i].Point == point {
			return t[i], true
		}
	}
	return blockMount{}, false
}

// pointsOf lists the mount points of dev ("major:minor"), in table order.
func (t blockTable) pointsOf(dev string) []string {
	var out []string
	for _, m := range t {
		if m.Dev == dev {
			out = append(out, m.Point)
		}
	}
	return out
}

// shows names what a block stage's mount m shows: the device, for the
// whole of an ext4 filesystem; ok is false for anything else (a bind
// mount of a directory, another filesystem), which the bind mounter names.
func (m blockMount) shows() (dev string, ok bool) {
	if m.FSType == "ext4" && m.Root == "/" {
		return m.Source, true
	}
	return "", false
}
