package mount

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestBlockParseBlkid(t *testing.T) {
	for _, tc := range []struct {
		name    string
		out     ToolOutput
		want    probe
		wantErr string
	}{
		{name: "nothing found", out: ToolOutput{Exit: 2}, want: probe{Blank: true}},
		{name: "nothing found but a warning", out: ToolOutput{Exit: 2, Stderr: []byte("blkid: error: /dev/x: No medium found\n")}, wantErr: "No medium found"},
		{name: "ext4", out: ToolOutput{Stdout: []byte("DEVNAME=/dev/x\nUUID=1234\nVERSION=1.0\nBLOCK_SIZE=4096\nTYPE=ext4\nUSAGE=filesystem\n")}, want: probe{Type: "ext4", UUID: "1234"}},
		{name: "partition table", out: ToolOutput{Stdout: []byte("DEVNAME=/dev/x\nPTUUID=abcd\nPTTYPE=gpt\n")}, want: probe{PTType: "gpt"}},
		{name: "swap", out: ToolOutput{Stdout: []byte("DEVNAME=/dev/x\nVERSION=1\nTYPE=swap\nUSAGE=other\n")}, want: probe{Type: "swap"}},
		{name: "ambivalent", out: ToolOutput{Exit: 8}, want: probe{Ambivalent: true}},
		{name: "usage error", out: ToolOutput{Exit: 4, Stderr: []byte("bad usage")}, wantErr: "exited 4: bad usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBlkid("/dev/x", tc.out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseBlkid = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestBlockPlanStage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        probe
		readOnly bool
		want     stageAction
		refused  string // "": not refused
	}{
		{name: "blank", p: probe{Blank: true}, want: actFormat},
		{name: "ext4", p: probe{Type: "ext4", UUID: "u"}, want: actCheck},
		{name: "ext4, read-only", p: probe{Type: "ext4", UUID: "u"}, readOnly: true, want: actReadOnly},
		{name: "xfs, read-only", p: probe{Type: "xfs"}, readOnly: true, refused: "a xfs signature"},
		{name: "ext4 and a partition table", p: probe{Type: "ext4", PTType: "dos"}, refused: "partition table (dos)"},
		{name: "partition table", p: probe{PTType: "gpt"}, refused: "partition table (gpt)"},
		{name: "ext2", p: probe{Type: "ext2"}, refused: "a ext2 signature"},
		{name: "xfs", p: probe{Type: "xfs"}, refused: "a xfs signature"},
		{name: "LUKS", p: probe{Type: "crypto_LUKS"}, refused: "crypto_LUKS"},
		{name: "several signatures", p: probe{Ambivalent: true}, refused: "several signatures"},
		{name: "found, unnamed", p: probe{UUID: "u"}, refused: "does not name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planStage("/dev/x", tc.p, tc.readOnly)
			if tc.refused != "" {
				if !errors.Is(err, ErrForeignContent) || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "/dev/x") {
					t.Fatalf("err = %v, want ErrForeignContent naming /dev/x and %q", err, tc.refused)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("planStage = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// A blank read-only device is refused: never handed to mkfs.ext4.
func TestBlockPlanStageReadOnlyBlank(t *testing.T) {
	_, err := planStage("/dev/x", probe{Blank: true}, true)
	if !errors.Is(err, ErrUnformattedReadOnly) || !strings.Contains(err.Error(), "/dev/x") {
		t.Fatalf("planStage = %v; want ErrUnformattedReadOnly naming /dev/x", err)
	}
}

func TestBlockNeedsRecovery(t *testing.T) {
	sb := func(magic uint16, incompat uint32) []byte {
		b := make([]byte, sbSize)
		binary.LittleEndian.PutUint16(b[sbMagicAt:], magic)
		binary.LittleEndian.PutUint32(b[sbIncompatAt:], incompat)
		return b
	}
	for _, tc := range []struct {
		name    string
		sb      []byte
		want    bool
		wantErr bool
	}{
		{name: "clean", sb: sb(ext4Magic, 0x2c2)}, // filetype, extent, 64bit, flex_bg
		{name: "journal to replay", sb: sb(ext4Magic, 0x2c6), want: true},
		{name: "not ext4", sb: sb(0x1234, 0x4), wantErr: true},
		{name: "short", sb: sb(ext4Magic, 0x4)[:sbIncompatAt], wantErr: true},
	} {
		got, err := needsRecovery("/dev/x", tc.sb)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: needsRecovery = %v, %v; want %v (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
	if readOnlyData(true) != "noload" || readOnlyData(false) != "" {
		t.Errorf("readOnlyData = %q, %q", readOnlyData(true), readOnlyData(false))
	}
}

// TestBlockToolVerdicts: e2fsck's and mkfs.ext4's answers, classified.
// A device another program has open exclusively (e2fsck's exit 8 "<dev>
// is in use.", mke2fs's "apparently in use by the system": the fallback
// for a program that takes the device after the stage's own check) is
// ErrDeviceBusy naming the device, never ErrNeedsFsck; every other
// refusal of e2fsck is ErrNeedsFsck.
func TestBlockToolVerdicts(t *testing.T) {
	const inconsistent = "/dev/x: UNEXPECTED INCONSISTENCY"
	fsck, mkfs := fsckVerdict, mkfsVerdict
	for _, tc := range []struct {
		name    string
		verdict func(string, ToolOutput) error
		out     ToolOutput
		ok      bool
		want    error    // the class of the error, if any
		says    []string // besides the device
	}{
		{name: "e2fsck clean", verdict: fsck, out: ToolOutput{Exit: 0}, ok: true},
		{name: "e2fsck corrected", verdict: fsck, out: ToolOutput{Exit: 1, Stdout: []byte(inconsistent)}, ok: true},
		{name: "e2fsck reboot", verdict: fsck, out: ToolOutput{Exit: 2, Stdout: []byte(inconsistent)}, want: ErrNeedsFsck, says: []string{"reboot", "run e2fsck /dev/x by hand"}},
		{name: "e2fsck corrected, reboot", verdict: fsck, out: ToolOutput{Exit: 3, Stdout: []byte(inconsistent)}, want: ErrNeedsFsck, says: []string{"reboot"}},
		{name: "e2fsck errors left", verdict: fsck, out: ToolOutput{Exit: 4, Stdout: []byte(inconsistent)}, want: ErrNeedsFsck, says: []string{"may not fix", "run e2fsck /dev/x by hand", "UNEXPECTED INCONSISTENCY"}},
		{name: "e2fsck errors left, some corrected", verdict: fsck, out: ToolOutput{Exit: 5, Stdout: []byte(inconsistent)}, want: ErrNeedsFsck, says: []string{"may not fix"}},
		{name: "e2fsck operational error", verdict: fsck, out: ToolOutput{Exit: 8, Stderr: []byte("e2fsck: Bad magic number in super-block")}, want: ErrNeedsFsck, says: []string{"run e2fsck /dev/x by hand", "Bad magic number"}},
		{name: "e2fsck cancelled", verdict: fsck, out: ToolOutput{Exit: 32}, want: ErrNeedsFsck, says: []string{"may not fix"}},
		{name: "e2fsck device in use", verdict: fsck, out: ToolOutput{Exit: 8, Stdout: []byte("/dev/x is in use.\n"), Stderr: []byte("e2fsck: Cannot continue, aborting.\n\n\n")},
			want: ErrDeviceBusy, says: []string{"in use by another program", "e2fsck -p exited 8", "Cannot continue", "retry later"}},
		{name: "e2fsck another device in use", verdict: fsck, out: ToolOutput{Exit: 8, Stdout: []byte("/dev/xy is in use.\n")}, want: ErrNeedsFsck},
		{name: "e2fsck in use, errors left", verdict: fsck, out: ToolOutput{Exit: 12, Stdout: []byte("/dev/x is in use.\n")}, want: ErrNeedsFsck},
		{name: "mkfs done", verdict: mkfs, out: ToolOutput{Exit: 0}, ok: true},
		{name: "mkfs device in use", verdict: mkfs, out: ToolOutput{Exit: 1, Stderr: []byte("/dev/x is apparently in use by the system; will not make a filesystem here!\n")},
			want: ErrDeviceBusy, says: []string{"in use by another program", "mkfs.ext4 exited 1", "will not make a filesystem here", "retry later"}},
		{name: "mkfs failed", verdict: mkfs, out: ToolOutput{Exit: 1, Stderr: []byte("mkfs.ext4: Device size reported to be zero.")}, says: []string{"mkfs.ext4 /dev/x exited 1", "size reported to be zero"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.verdict("/dev/x", tc.out)
			if tc.ok {
				if err != nil {
					t.Fatalf("%v, want nil", err)
				}
				return
			}
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if tc.want != ErrNeedsFsck && errors.Is(err, ErrNeedsFsck) {
				t.Errorf("%v: ErrNeedsFsck, for %v", err, tc.want)
			}
			if tc.want != ErrDeviceBusy && errors.Is(err, ErrDeviceBusy) {
				t.Errorf("%v: ErrDeviceBusy, for %v", err, tc.want)
			}
			for _, want := range append(tc.says, "/dev/x") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not say %q", err, want)
				}
			}
		})
	}
}

// TestBlockToolArgs: the device is always after "--", and mkfs.ext4 is
// never forced.
func TestBlockToolArgs(t *testing.T) {
	for name, args := range map[string][]string{"blkid": blkidArgs("-dev"), "mkfs": mkfsArgs("-dev"), "fsck": fsckArgs("-dev")} {
		if n := len(args); n < 2 || args[n-2] != "--" || args[n-1] != "-dev" {
			t.Errorf("%s: %q: the device is not after --", name, args)
		}
	}
	if slices.ContainsFunc(mkfsArgs("/dev/x"), func(a string) bool { return strings.HasPrefix(a, "-F") }) {
		t.Errorf("mkfs.ext4 is forced: %q", mkfsArgs("/dev/x"))
	}
}

func TestBlockParseMounts(t *testing.T) {
	const info = `22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw
36 22 7:3 / /data/plugins/p/mounts/vol\0401 rw,relatime shared:1 master:2 - ext4 /dev/loop3 rw
37 36 7:3 / /data/pods/u/volumes/p/vol\0401 ro,relatime - ext4 /dev/loop3 rw
38 22 8:1 /srv/src /data/plugins/p/mounts/other rw - ext4 /dev/sda1 rw
39 36 0:50 / /data/plugins/p/mounts/vol\0401 rw - tmpfs tmp\134fs rw
`
	tab, err := parseBlockMounts(strings.NewReader(info))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		point   string
		want    blockMount
		listed  bool
		dev     string
		isBlock bool
	}{
		{point: "/data/plugins/p/mounts/vol 1", listed: true, // the tmpfs on top
			want: blockMount{Dev: "0:50", Root: "/", Point: "/data/plugins/p/mounts/vol 1", FSType: "tmpfs", Source: `tmp\fs`}},
		{point: "/data/pods/u/volumes/p/vol 1", listed: true, isBlock: true, dev: "/dev/loop3",
			want: blockMount{Dev: "7:3", Root: "/", Point: "/data/pods/u/volumes/p/vol 1", FSType: "ext4", Source: "/dev/loop3"}},
		{point: "/data/plugins/p/mounts/other", listed: true, // a bind mount of a directory
			want: blockMount{Dev: "8:1", Root: "/srv/src", Point: "/data/plugins/p/mounts/other", FSType: "ext4", Source: "/dev/sda1"}},
		{point: "/nowhere"},
	} {
		got, listed := tab.top(tc.point)
		if listed != tc.listed || got != tc.want {
			t.Errorf("top(%q) = %+v, %v; want %+v, %v", tc.point, got, listed, tc.want, tc.listed)
		}
		if dev, ok := got.shows(); ok != tc.isBlock || dev != tc.dev {
			t.Errorf("top(%q).shows() = %q, %v; want %q, %v", tc.point, dev, ok, tc.dev, tc.isBlock)
		}
	}
	if got, want := tab.pointsOf("7:3"), []string{"/data/plugins/p/mounts/vol 1", "/data/pods/u/volumes/p/vol 1"}; !slices.Equal(got, want) {
		t.Errorf("pointsOf(7:3) = %q, want %q", got, want)
	}
	for _, bad := range []string{
		"22 1 0:21 / /proc rw shared:12 proc proc rw\n", // no separator
		"22 1 0:21 / /proc rw - proc\n",                 // no source
		"22 1 0:21 / /proc - proc proc rw\n",            // separator among the first six fields
	} {
		if _, err := parseBlockMounts(strings.NewReader(bad)); err == nil {
			t.Errorf("parseBlockMounts(%q): no error", bad)
		}
	}
}
