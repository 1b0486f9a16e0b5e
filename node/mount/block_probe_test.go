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

func TestBlockFsckVerdict(t *testing.T) {
	for _, tc := range []struct {
		exit int
		ok   bool
		says string
	}{
		{exit: 0, ok: true},
		{exit: 1, ok: true},
		{exit: 2, says: "reboot"},
		{exit: 3, says: "reboot"},
		{exit: 4, says: "may not fix"},
		{exit: 5, says: "may not fix"},
		{exit: 8, says: "may not fix"},
		{exit: 12, says: "may not fix"},
		{exit: 32, says: "may not fix"},
	} {
		err := fsckVerdict("/dev/x", ToolOutput{Exit: tc.exit, Stdout: []byte("/dev/x: UNEXPECTED INCONSISTENCY")})
		if tc.ok {
			if err != nil {
				t.Errorf("exit %d: %v, want nil", tc.exit, err)
			}
			continue
		}
		if !errors.Is(err, ErrNeedsFsck) {
			t.Errorf("exit %d: %v, want ErrNeedsFsck", tc.exit, err)
			continue
		}
		for _, want := range []string{tc.says, "run e2fsck /dev/x by hand", "UNEXPECTED INCONSISTENCY"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("exit %d: %q does not say %q", tc.exit, err, want)
			}
		}
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
