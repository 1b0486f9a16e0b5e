package mount

import (
	"os"
	"strings"
	"testing"
)

const sampleMountinfo = `22 1 0:21 / /proc rw,relatime shared:12 - proc proc rw
1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 1 0:30 / /tmp rw,nosuid - tmpfs tmpfs rw
31 1 254:0 /srv/data /data rw - ext4 /dev/vda rw
40 31 254:0 /srv/content/vol\0401 /data/plugins/p/mounts/vol\0401 rw - ext4 /dev/vda rw
41 31 254:0 /srv/content/vol\0401 /data/pods/u1/volumes/p/vol\0401 ro,relatime - ext4 /dev/vda rw
42 31 254:0 /srv/content/vol\0401 /data/pods/u2/volumes/p/vol\0401 rw - ext4 /dev/vda rw
43 30 0:30 /x/a\134b /tmp/y/tab\011nl\012 rw - tmpfs tmpfs rw
44 43 0:30 /x/a\134b /tmp/y/tab\011nl\012 ro - tmpfs tmpfs rw
`

func TestParseMountinfo(t *testing.T) {
	tab, err := parseMountinfo(strings.NewReader(sampleMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	entries := tab.entries
	if len(entries) != 9 {
		t.Fatalf("%d entries, want 9", len(entries))
	}
	want := mountEntry{ID: 41, Parent: 31, Dev: "254:0", Root: "/srv/content/vol 1", Point: "/data/pods/u1/volumes/p/vol 1", ReadOnly: true}
	if entries[5] != want {
		t.Errorf("entry = %+v\nwant %+v", entries[5], want)
	}
	if got := entries[7].Point; got != "/tmp/y/tab\tnl\n" {
		t.Errorf("escaped mount point = %q", got)
	}
	if got := entries[7].Root; got != `/x/a\b` {
		t.Errorf("escaped root = %q", got)
	}
	if _, err := parseMountinfo(strings.NewReader("1 2 3\n")); err == nil {
		t.Error("short line accepted")
	}
	if _, err := parseMountinfo(strings.NewReader("a b 0:1 / / rw - x x rw\n")); err == nil {
		t.Error("bad IDs accepted")
	}
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`plain`: "plain", `a\040b`: "a b", `\134`: `\`, `a\04`: `a\04`, `a\8xx`: `a\8xx`, `\`: `\`, `x\0401\040`: "x 1 ",
	} {
		if got := unescapeOctal(in); got != want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTopAndSource(t *testing.T) {
	tab, err := parseMountinfo(strings.NewReader(sampleMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	// A stage shows its content directory (seen through /, as /srv/data
	// mounted at /data does not hold it); a publish shows its stage, not a
	// sibling publish; a stacked mount is looked at from the top.
	tests := []struct {
		point, want string
		id          int
	}{
		{"/data/plugins/p/mounts/vol 1", "/srv/content/vol 1", 40},
		{"/data/pods/u1/volumes/p/vol 1", "/data/plugins/p/mounts/vol 1", 41},
		{"/tmp/y/tab\tnl\n", `/tmp/x/a\b`, 44},
		{"/data", "/srv/data", 31},
	}
	for _, tt := range tests {
		top := tab.top(tt.point)
		if top == nil || top.ID != tt.id {
			t.Fatalf("topMount(%q) = %+v, want ID %d", tt.point, top, tt.id)
		}
		if got := tab.sourceOf(top, "/data/pods"); got != tt.want {
			t.Errorf("sourceOf(%q) = %q, want %q", tt.point, got, tt.want)
		}
	}
	if top := tab.top("/nowhere"); top != nil {
		t.Errorf("topMount(/nowhere) = %+v", top)
	}
	lone := &table{entries: []mountEntry{{ID: 1, Dev: "9:9", Root: "/sub", Point: "/m"}}}
	if got := lone.sourceOf(&lone.entries[0], "/p"); got != "/sub" {
		t.Errorf("sourceOf without candidates = %q, want the root /sub", got)
	}
}

func TestMountIDsSeesRoot(t *testing.T) {
	if _, err := os.Stat("/proc/self/mountinfo"); err != nil {
		t.Skip("no mount table here (not Linux)")
	}
	ids, err := MountIDs()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ids["/"]; !ok || len(ids) == 0 {
		t.Fatalf("MountIDs has no entry for /: %v", ids)
	}
}
