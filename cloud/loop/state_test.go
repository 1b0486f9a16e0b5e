package loop

import (
	"errors"
	"strings"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/names"
)

// testWorld has running i1 (limit 2), stopped i2, running i3 (limit 1);
// volumes excl (attached to i1 at loop1), multi (attached to i1 at loop2),
// free (detached), ro (multi-node, read-only, detached).
func testWorld() *world {
	w := newWorld()
	w.Instances["i1"] = instance{Node: "n1", Running: true, Limit: 2}
	w.Instances["i2"] = instance{Node: "n2", Running: false, Limit: 2}
	w.Instances["i3"] = instance{Node: "n3", Running: true, Limit: 1}
	w.nodes = map[cloud.NodeName]cloud.InstanceID{"n1": "i1", "n2": "i2", "n3": "i3"}
	w.Volumes["excl"] = volume{Mode: accessMode(cloud.Exclusive), Size: mib,
		Attached: map[cloud.InstanceID]attachment{"i1": {Device: "/dev/loop1", Image: "/d/images/excl.img"}}}
	w.Volumes["multi"] = volume{Mode: accessMode(cloud.MultiNode), Size: mib,
		Attached: map[cloud.InstanceID]attachment{"i1": {Device: "/dev/loop2", Image: "/d/images/multi.img"}}}
	w.Volumes["free"] = volume{Mode: accessMode(cloud.Exclusive), Size: mib}
	w.Volumes["ro"] = volume{Mode: accessMode(cloud.MultiNode), Size: mib, ReadOnly: true}
	return w
}

func TestCheckAttach(t *testing.T) {
	for _, tc := range []struct {
		name     string
		vol      cloud.VolumeID
		inst     cloud.InstanceID
		wantKind cloud.Kind
		wantDev  string // already attached
	}{
		{"unknown volume", "nope", "i1", cloud.KindNotFound, ""},
		{"unknown instance", "free", "i9", cloud.KindNotFound, ""},
		{"stopped instance", "free", "i2", cloud.KindRetryable, ""},
		{"already attached", "excl", "i1", cloud.KindNone, "/dev/loop1"},
		{"exclusive elsewhere", "excl", "i3", cloud.KindAttachedElsewhere, ""},
		{"multi-node elsewhere", "multi", "i3", cloud.KindNone, ""},
		{"at the limit", "free", "i1", cloud.KindLimitReached, ""},
		{"elsewhere before limit", "excl", "i3", cloud.KindAttachedElsewhere, ""},
		{"new", "free", "i3", cloud.KindNone, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ok, err := testWorld().checkAttach(tc.vol, tc.inst)
			if k := cloud.Classify(err); k != tc.wantKind {
				t.Fatalf("kind %v (%v), want %v", k, err, tc.wantKind)
			}
			if ok != (tc.wantDev != "") || a.Device != tc.wantDev {
				t.Errorf("attached %v at %q, want %q", ok, a.Device, tc.wantDev)
			}
		})
	}
}

func TestCheckDetach(t *testing.T) {
	for _, tc := range []struct {
		vol      cloud.VolumeID
		inst     cloud.InstanceID
		wantKind cloud.Kind
		wantOK   bool
	}{
		{"excl", "i1", cloud.KindNone, true},
		{"excl", "i3", cloud.KindNone, false},
		{"nope", "i1", cloud.KindNotFound, false},
		{"excl", "i9", cloud.KindNotFound, false},
	} {
		_, ok, err := testWorld().checkDetach(tc.vol, tc.inst)
		if cloud.Classify(err) != tc.wantKind || ok != tc.wantOK {
			t.Errorf("checkDetach(%s, %s) = %v, %v; want %v, %v", tc.vol, tc.inst, ok, err, tc.wantOK, tc.wantKind)
		}
	}
}

func TestCloneSharesNothing(t *testing.T) {
	w := testWorld()
	c := w.clone()
	c.removeAttachment("excl", "i1")
	c.deleteInstance("i3")
	c.addInstance("n4", 1)
	if _, ok := w.Volumes["excl"].Attached["i1"]; !ok {
		t.Error("removing an attachment from a clone removed it from the original")
	}
	if _, ok := w.Instances["i3"]; !ok || w.nodes["n4"] != "" || w.Seq != 0 {
		t.Error("changing a clone's instances changed the original's")
	}
}

func TestAddInstanceIDIsAValidName(t *testing.T) {
	w := newWorld()
	long := cloud.NodeName(strings.Repeat("n", names.MaxNameLen))
	for _, node := range []cloud.NodeName{"n1", long} {
		id := w.addInstance(node, 1)
		if err := validInstance(id); err != nil {
			t.Errorf("instance of %q: %v", node, err)
		}
	}
	if got := w.addInstance("n1", 1); got != "i-n1-3" {
		t.Errorf("ID %s, want i-n1-3", got)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(w *world)
		want   string // in the error; "" for none
	}{
		{"valid", func(*world) {}, ""},
		{"version", func(w *world) { w.Version = 2 }, "version"},
		{"bad instance ID", func(w *world) { w.Instances["../i"] = instance{Node: "n9", Running: true} }, "invalid instance ID"},
		{"bad node", func(w *world) { w.Instances["i9"] = instance{Node: "a/b"} }, "invalid node name"},
		{"two instances, one node", func(w *world) { w.Instances["i9"] = instance{Node: "n1"} }, "both back node n1"},
		{"negative limit", func(w *world) { w.Instances["i9"] = instance{Node: "n9", Limit: -1} }, "negative attach limit"},
		{"bad volume ID", func(w *world) { w.Volumes["../v"] = volume{Size: mib} }, "invalid volume ID"},
		{"bad size", func(w *world) { w.Volumes["v"] = volume{Size: 100} }, "multiple of 512"},
		{"exclusive twice", func(w *world) { w.setAttachment("excl", "i3", attachment{Device: "/dev/loop3"}) }, "attached to 2 instances"},
		{"unknown instance", func(w *world) { w.setAttachment("free", "i9", attachment{Device: "/dev/loop3"}) }, "unknown instance"},
		{"stopped instance", func(w *world) { w.setAttachment("free", "i2", attachment{Device: "/dev/loop3"}) }, "stopped instance"},
		{"bad device", func(w *world) { w.setAttachment("free", "i3", attachment{Device: "/etc/passwd"}) }, "not a loop device path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := testWorld()
			tc.change(w)
			err := w.validate()
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("validate: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoopIndex(t *testing.T) {
	for dev, want := range map[string]int{
		"/dev/loop0": 0, "/dev/loop17": 17,
		"/dev/loop": -1, "/dev/loop01": -1, "/dev/loop-1": -1, "/dev/loop1/../sda": -1,
		"/dev/sda": -1, "loop1": -1, "/dev/loop1 ": -1,
	} {
		n, ok := loopIndex(dev)
		if ok != (want >= 0) || ok && n != want {
			t.Errorf("loopIndex(%q) = %d, %v; want %d", dev, n, ok, want)
		}
	}
}

func TestParseBacking(t *testing.T) {
	for raw, want := range map[string]struct {
		path    string
		deleted bool
	}{
		"/d/images/v.img\n":           {"/d/images/v.img", false},
		"/d/images/v.img (deleted)\n": {"/d/images/v.img", true},
		"/d/images/v.img":             {"/d/images/v.img", false},
	} {
		path, deleted := parseBacking(raw)
		if path != want.path || deleted != want.deleted {
			t.Errorf("parseBacking(%q) = %q, %v", raw, path, deleted)
		}
	}
}

func TestOrphan(t *testing.T) {
	const images = "/d/images"
	w := testWorld()
	for _, tc := range []struct {
		dev, backing string
		want         cloud.VolumeID // "" if not an orphan
	}{
		{"/dev/loop1", "/d/images/excl.img\n", ""},               // recorded
		{"/dev/loop9", "/d/images/excl.img\n", "excl"},           // a second device of excl
		{"/dev/loop2", "/d/images/excl.img\n", "excl"},           // multi's record, not excl's
		{"/dev/loop9", "/d/images/gone.img (deleted)\n", "gone"}, // deleted volume's image
		{"/dev/loop9", "/d/images/free.img\n", "free"},
		{"/dev/loop9", "/elsewhere/free.img\n", ""},
		{"/dev/loop9", "/d/images/sub/free.img\n", ""},
		{"/dev/loop9", "/d/images/free.raw\n", ""},
		{"/dev/loop9", "/d/images/.hidden.img\n", ""}, // no volume has that name
		{"/dev/loop9", "/d/images.img\n", ""},
	} {
		got, ok := orphan(w, images, tc.dev, tc.backing)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("orphan(%s, %q) = %q, %v; want %q", tc.dev, tc.backing, got, ok, tc.want)
		}
	}
}

func TestHolds(t *testing.T) {
	id := fileID{Dev: 1, Ino: 2}
	good := binding{Backing: "/d/images/v.img", File: id}
	for _, tc := range []struct {
		name string
		b    binding
		ro   bool
		want bool
	}{
		{"same file", good, false, true},
		{"other path", binding{Backing: "/x.img", File: id}, false, false},
		{"other inode", binding{Backing: good.Backing, File: fileID{1, 3}}, false, false},
		{"deleted", binding{Backing: good.Backing, File: id, Deleted: true}, false, false},
		{"read-only wanted", good, true, false},
	} {
		if got := holds(tc.b, "/d/images/v.img", id, tc.ro); got != tc.want {
			t.Errorf("%s: holds = %v", tc.name, got)
		}
	}
}

func TestPreflight(t *testing.T) {
	for _, tc := range []struct {
		name   string
		euid   int
		ctlErr error
		want   error
	}{
		{"root with loop devices", 0, nil, nil},
		{"not root", 1000, nil, ErrNotRoot},
		{"no loop driver", 0, errors.New("open /dev/loop-control: no such file"), ErrUnavailable},
	} {
		err := preflight(tc.euid, tc.ctlErr)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestPlanReconcile(t *testing.T) {
	const images = "/d/images"
	id := map[cloud.VolumeID]fileID{"excl": {1, 10}, "multi": {1, 20}}
	at := func(vol string, ino uint64) binding {
		return binding{Backing: images + "/" + vol + ".img", File: fileID{1, ino}}
	}
	holding := map[string]binding{"/dev/loop1": at("excl", 10), "/dev/loop2": at("multi", 20)}
	for _, tc := range []struct {
		name      string
		images    string
		observed  map[string]binding
		wantStale []attachmentRef
		changed   bool
	}{
		{"all hold", images, holding, nil, false},
		{"directory moved", "/e/images", map[string]binding{
			"/dev/loop1": {Backing: "/e/images/excl.img", File: fileID{1, 10}},
			"/dev/loop2": {Backing: "/e/images/multi.img", File: fileID{1, 20}}}, nil, true},
		{"rebooted", images, nil, []attachmentRef{{"excl", "i1"}, {"multi", "i1"}}, true},
		{"rebound elsewhere", images, map[string]binding{"/dev/loop1": {Backing: "/x.img", File: fileID{2, 5}}, "/dev/loop2": at("multi", 20)},
			[]attachmentRef{{"excl", "i1"}}, true},
		{"image replaced", images, map[string]binding{"/dev/loop1": at("excl", 11), "/dev/loop2": at("multi", 20)},
			[]attachmentRef{{"excl", "i1"}}, true},
		{"bound read-only", images, map[string]binding{"/dev/loop1": {Backing: images + "/excl.img", File: fileID{1, 10}, ReadOnly: true}, "/dev/loop2": at("multi", 20)},
			[]attachmentRef{{"excl", "i1"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := testWorld()
			p := planReconcile(w, tc.images, id, tc.observed)
			if len(p.stale) != len(tc.wantStale) {
				t.Fatalf("stale %v, want %v", p.stale, tc.wantStale)
			}
			for i, ref := range tc.wantStale {
				if p.stale[i] != ref {
					t.Errorf("stale %v, want %v", p.stale, tc.wantStale)
				}
				if _, ok := p.next.Volumes[ref.Vol].Attached[ref.Inst]; ok {
					t.Errorf("stale %v still recorded in the plan", ref)
				}
			}
			if p.changed != tc.changed {
				t.Errorf("changed = %v, want %v", p.changed, tc.changed)
			}
			for _, ref := range p.next.attachments() {
				if a := p.next.Volumes[ref.Vol].Attached[ref.Inst]; a.Image != imagePath(tc.images, ref.Vol) {
					t.Errorf("%v kept with image %s", ref, a.Image)
				}
			}
			if _, ok := w.Volumes["excl"].Attached["i1"]; !ok {
				t.Error("the plan changed the world it was given")
			}
		})
	}
}

// Two records claiming one device: the first (in order of volume, then
// instance) keeps it; the other is stale.
func TestPlanReconcileDeviceClaimedTwice(t *testing.T) {
	w := testWorld()
	w.setAttachment("multi", "i3", attachment{Device: "/dev/loop2", Image: "/d/images/multi.img"})
	b := binding{Backing: "/d/images/multi.img", File: fileID{1, 20}}
	p := planReconcile(w, "/d/images", map[cloud.VolumeID]fileID{"excl": {1, 10}, "multi": {1, 20}},
		map[string]binding{"/dev/loop1": {Backing: "/d/images/excl.img", File: fileID{1, 10}}, "/dev/loop2": b})
	want := attachmentRef{"multi", "i3"}
	if len(p.stale) != 1 || p.stale[0] != want {
		t.Errorf("stale %v, want [%v]", p.stale, want)
	}
}
