package loop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// A second Cloud on the directory of one dropped without Close sees what
// the first acknowledged: instances, volumes, attachments, devices.
func TestReopenAfterCrashSeesAttachments(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	dm1, dm2 := f.attach(t, "multi", f.i1), f.attach(t, "multi", f.i2)
	if err := f.c.Terminate(f.i2); err != nil {
		t.Fatal(err)
	}
	waitNotBacking(t, dm2, f.image("multi"))
	want := f.c.Attachments()
	crash(f.c)

	c2 := openCloud(t, f.dir, Config{})
	if got := c2.Attachments(); !equalAttachments(got, want) {
		t.Errorf("Attachments after reopen = %v, want %v", got, want)
	}
	if id, ok := c2.InstanceOf("n1"); !ok || id != f.i1 {
		t.Errorf("InstanceOf(n1) = %s, %v; want %s", id, ok, f.i1)
	}
	if c2.Running(f.i2) {
		t.Errorf("%s runs again after reopen; it was terminated", f.i2)
	}
	got, err := c2.InstanceVolumes(context.Background(), []cloud.InstanceID{f.i1})
	if err != nil {
		t.Fatal(err)
	}
	if got[f.i1]["excl"] != dev || got[f.i1]["multi"] != dm1 {
		t.Errorf("InstanceVolumes after reopen = %v, want excl at %s, multi at %s (the devices survived)", got, dev, dm1)
	}
	if mode, _, ok := c2.Volume("ro"); !ok || mode != cloud.MultiNode {
		t.Errorf("Volume(ro) = %v, %v", mode, ok)
	}
}

func equalAttachments(a, b map[cloud.VolumeID][]cloud.InstanceID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestOpenRefusesDirectoryInUse(t *testing.T) {
	dir := newDir(t)
	c := openCloud(t, dir, Config{})
	if _, err := Open(Config{Dir: dir}); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Open: %v, want ErrInUse", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddInstanceChecked("n1"); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close: %v, want ErrClosed", err)
	}
	openCloud(t, dir, Config{}) // free again
}

// A lost state file with images beside it is refused: starting empty
// would give their data to new volumes.
func TestOpenRefusesLostState(t *testing.T) {
	f := newFixture(t, Config{})
	crash(f.c)
	if err := os.Remove(filepath.Join(f.dir, stateName)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Dir: f.dir}); err == nil || !strings.Contains(err.Error(), "refusing to start empty") {
		t.Fatalf("Open without state: %v", err)
	}
}

// childEnv makes the test binary a child of TestKillKeepsAcknowledged:
// the data directory it attaches volumes in until it is killed.
const childEnv = "LOOP_TEST_CHILD_DIR"

// killVolumes is how many volumes the child attaches, one by one.
const killVolumes = 40

// A process killed (SIGKILL) in the middle of its changes loses none it
// acknowledged, and leaves no device that Open does not account for. The
// kill lands at several points of the child's work: right after an
// acknowledgement, and a little later (the delays only vary where it
// lands; nothing waits on them).
func TestKillKeepsAcknowledged(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		runChild(dir)
		return
	}
	for _, ms := range []int{0, 2, 5, 10, 20} {
		t.Run(fmt.Sprintf("after-%dms", ms), func(t *testing.T) { killChild(t, time.Duration(ms)*time.Millisecond) })
	}
}

// killChild starts a child attaching volumes, kills it delay after its
// eighth acknowledgement, and checks the state Open then finds.
func killChild(t *testing.T, delay time.Duration) {
	dir := newDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillKeepsAcknowledged$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	acked := readAcks(t, out, 8)
	time.Sleep(delay)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	c := openCloud(t, dir, Config{})
	inst, ok := c.InstanceOf("n1")
	if !ok {
		t.Fatal("no instance for n1 after the kill")
	}
	got, err := c.InstanceVolumes(context.Background(), []cloud.InstanceID{inst})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed after %d acknowledgements; %d attachments recorded", len(acked), len(got[inst]))
	for vol, dev := range acked {
		if got[inst][vol] != dev {
			t.Errorf("acknowledged %s at %s; after the kill: %q", vol, dev, got[inst][vol])
		}
	}
	for vol, dev := range got[inst] {
		image, _ := c.ImagePath(vol)
		if b := sysBackingOf(t, dev); b != image {
			t.Errorf("%s recorded at %s, which is bound to %q", vol, dev, b)
		}
	}
	if n := len(losetupUnder(t, dir)); n != len(got[inst]) {
		t.Errorf("%d devices bound to images, %d attachments recorded: Open left orphans", n, len(got[inst]))
	}
}

// readAcks reads the child's acknowledgements ("vol dev") until it has n.
func readAcks(t *testing.T, r interface{ Read([]byte) (int, error) }, n int) map[cloud.VolumeID]string {
	t.Helper()
	acked := make(map[cloud.VolumeID]string)
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	timeout := time.After(30 * time.Second)
	for len(acked) < n {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the child ended after %d acknowledgements", len(acked))
			}
			if vol, dev, found := strings.Cut(line, " "); found && strings.HasPrefix(vol, "v") {
				acked[cloud.VolumeID(vol)] = dev
			}
		case <-timeout:
			t.Fatalf("%d acknowledgements in 30 s, want %d", len(acked), n)
		}
	}
	go func() {
		for range lines { // drain until the child dies
		}
	}()
	return acked
}

// runChild attaches killVolumes volumes to one instance, printing each
// acknowledgement, then waits to be killed (a minute at most).
func runChild(dir string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	c, err := Open(Config{Dir: dir, AttachLimit: killVolumes})
	if err != nil {
		fail(err)
	}
	inst, err := c.AddInstanceChecked("n1")
	if err != nil {
		fail(err)
	}
	for i := range killVolumes {
		vol := cloud.VolumeID(fmt.Sprintf("v%02d", i))
		if err := c.CreateVolume(vol, cloud.Exclusive, mib); err != nil {
			fail(err)
		}
		dev, err := c.Attach(context.Background(), vol, inst)
		if err != nil {
			fail(err)
		}
		fmt.Printf("%s %s\n", vol, dev)
	}
	time.Sleep(time.Minute)
	os.Exit(0)
}

// losetupUnder returns the devices bound to files below dir.
func losetupUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for dev, back := range losetupList(t) {
		if strings.HasPrefix(back, dir+"/") {
			out = append(out, dev)
		}
	}
	return out
}
