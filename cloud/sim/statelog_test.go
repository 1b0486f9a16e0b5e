package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

// waitLocked polls cond under c's lock until it holds, failing after 10s.
func waitLocked(t *testing.T, c *Cloud, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return cond()
	}, "%s", what)
}

// TestGroupCommit: while one group is being written, later changes queue
// without holding the lock and go out together in the next group; the
// observers hear of a change only once it is durable, in order; a failed
// group fails every change queued with and after it, and undoes them.
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.json")
	c := mustOpen(t, Config{StatePath: path})
	inst := c.AddInstance("n1")
	const n = 8
	for i := range n + 1 {
		c.CreateVolume(cloud.VolumeID(fmt.Sprint("v", i)), cloud.MultiNode)
	}
	var seen []cloud.VolumeID
	c.ObserveSync(func(ch Change) { seen = append(seen, ch.Volume) })
	release := make(chan error)
	entered := make(chan struct{}, 1)
	var groups [][]byte
	def := c.state.appendAndSync
	setAppend(c, func(f *os.File, data []byte) error {
		groups = append(groups, data)
		entered <- struct{}{}
		if err := <-release; err != nil {
			return err
		}
		return def(f, data)
	})
	attach := func(i int, errs chan<- error) {
		_, err := c.Attach(context.Background(), cloud.VolumeID(fmt.Sprint("v", i)), inst)
		errs <- err
	}
	first := make(chan error, 1)
	go attach(0, first)
	<-entered // the writer of v0 holds the files
	rest := make(chan error, n)
	for i := 1; i <= n; i++ {
		go attach(i, rest)
	}
	waitLocked(t, c, "the attaches to queue", func() bool { return len(c.state.queue) == n })
	c.SetLatency(0) // takes the lock: nobody holds it while waiting
	c.mu.Lock()
	if len(seen) != 0 {
		t.Errorf("observers saw %v before any write", seen)
	}
	c.mu.Unlock()
	release <- nil
	mustNil(t, <-first)
	<-entered // the next writer took every queued change
	c.mu.Lock()
	if !reflect.DeepEqual(seen, []cloud.VolumeID{"v0"}) {
		t.Errorf("observers saw %v, want only the durable v0", seen)
	}
	c.mu.Unlock()
	release <- errors.New("injected sync failure")
	for range n {
		checkErr(t, <-rest, cloud.KindRetryable, path)
	}
	if len(groups) != 2 || strings.Count(string(groups[1]), `"instances"`) != n {
		t.Errorf("wrote %d groups, the second with %d changes; want 2, %d", len(groups), strings.Count(string(groups[len(groups)-1]), `"instances"`), n)
	}
	if got := c.Attachments(); !reflect.DeepEqual(got, attachments("v0", string(inst))) {
		t.Errorf("attachments after the failed group = %v, want only v0", got)
	}
	if !reflect.DeepEqual(seen, []cloud.VolumeID{"v0"}) {
		t.Errorf("observers saw %v, want only v0", seen)
	}
	setAppend(c, def)
	(&fixture{c: c}).attach(t, "v1", inst)
	if got, want := fileState(t, path), snapshot(c); !reflect.DeepEqual(got, want) {
		t.Errorf("files hold\n%+v\nmemory\n%+v", got, want)
	}
}

// TestFsyncs: one fsync per sequential change once the log exists; four
// for the snapshot and log the first change writes.
func TestFsyncs(t *testing.T) {
	c := mustOpen(t, Config{StatePath: filepath.Join(t.TempDir(), "cloud.json")})
	if New(Config{}).Fsyncs() != 0 || c.Fsyncs() != 0 {
		t.Fatal("fsyncs before any change")
	}
	inst := c.AddInstance("n1")
	if got := c.Fsyncs(); got != 5 {
		t.Errorf("first change: %d fsyncs, want 5", got)
	}
	c.CreateVolume("v", cloud.Exclusive)
	(&fixture{c: c}).attach(t, "v", inst)
	if got := c.Fsyncs(); got != 7 {
		t.Errorf("two more changes: %d fsyncs, want 7", got)
	}
}

// TestCompaction: the log is folded into a new snapshot once it is past
// its bound, and a crash at any point of that loads the same state.
func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloud.json")
	c := mustOpen(t, Config{StatePath: path})
	c.state.minGroups = 4
	inst := c.AddInstance("n1")
	for i := range 3 {
		c.CreateVolume(cloud.VolumeID(fmt.Sprint("v", i)), cloud.Exclusive)
	}
	// Copy the files at each step of the next compaction: each copy is
	// what a crash there leaves.
	var crashes []string
	var want *state
	copyFiles := func() {
		to := filepath.Join(t.TempDir(), "cloud.json")
		for _, suffix := range []string{"", ".log"} {
			if data, err := os.ReadFile(path + suffix); err == nil {
				mustNil(t, os.WriteFile(to+suffix, data, 0o600))
			}
		}
		crashes = append(crashes, to)
	}
	c.state.write = func(p string, data []byte) (bool, error) {
		if want == nil {
			want = snapshot(c) // the writer holds no lock
		}
		copyFiles()
		renamed, err := c.state.writeFileAtomic(p, data)
		copyFiles()
		return renamed, err
	}
	gen := c.state.gen
	for i := 0; c.state.gen == gen; i++ {
		if i == 20 {
			t.Fatal("no compaction after 20 changes")
		}
		if _, err := c.Attach(context.Background(), cloud.VolumeID(fmt.Sprint("v", i%3)), inst); err != nil {
			t.Fatal(err)
		}
	}
	if len(crashes) != 4 {
		t.Fatalf("%d copies, want 4", len(crashes))
	}
	for i, p := range crashes {
		if got := fileState(t, p); !reflect.DeepEqual(got, want) {
			t.Errorf("crash %d: loads\n%+v\nwant\n%+v", i, got, want)
		}
	}
	if fi, err := os.Stat(path + ".log"); err != nil || fi.Size() != int64(len(headerFrame(c.state.gen))) {
		t.Errorf("log after compaction: %v, %v; want only its header", fi, err)
	}
	if got, want := fileState(t, path), snapshot(c); !reflect.DeepEqual(got, want) {
		t.Errorf("files hold\n%+v\nmemory\n%+v", got, want)
	}
}

// TestLogTornAndCorrupt: a torn last group is ignored; corruption before
// the end is an error naming the log and the offset.
func TestLogTornAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloud.json")
	c := mustOpen(t, Config{StatePath: path})
	inst := c.AddInstance("n1")
	c.CreateVolume("v", cloud.Exclusive)
	before := snapshot(c)
	mustNil(t, c.SetAttachLimit(inst, 7))
	log, err := os.ReadFile(path + ".log")
	mustNil(t, err)
	var frames []int // offsets
	for off := 0; off < len(log); {
		frames = append(frames, off)
		_, next, err := nextFrame(log, off)
		mustNil(t, err)
		off = next
	}
	if len(frames) < 3 {
		t.Fatalf("log has %d frames, want a header and groups", len(frames))
	}
	lastFrame := frames[len(frames)-1] // the SetAttachLimit group
	snap, err := os.ReadFile(path)
	mustNil(t, err)

	for _, tt := range []struct {
		name string
		log  []byte
		want *state // nil: an error naming the offset
	}{
		{"half a group", log[:lastFrame+frameHead+3], before},
		{"only a length", log[:lastFrame+2], before},
		{"zeros", append(append([]byte{}, log[:lastFrame]...), make([]byte, len(log)-lastFrame)...), before},
		{"garbage payload", append(append([]byte{}, log[:len(log)-2]...), 'x', 'x'), before},
		{"corrupt before the end", func() []byte {
			b := append([]byte{}, log...)
			b[frames[len(frames)-2]+frameHead+1] ^= 0xff // the group before
			return b
		}(), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "cloud.json")
			mustNil(t, os.WriteFile(p, snap, 0o600))
			mustNil(t, os.WriteFile(p+".log", tt.log, 0o600))
			c2, err := Open(Config{StatePath: p})
			if tt.want == nil {
				if err == nil || !strings.Contains(err.Error(), p+".log") || !strings.Contains(err.Error(), "offset") {
					t.Fatalf("Open = %v, want an error naming the log and the offset", err)
				}
				return
			}
			mustNil(t, err)
			if got := snapshot(c2); !reflect.DeepEqual(world(got), world(tt.want)) {
				t.Errorf("loaded\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestVersion1Loads: a state file of the single-file format loads as a
// snapshot without log, and changes follow it.
func TestVersion1Loads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud-state.json")
	old := `{"version":1,"seq":1,"tag":"me","instances":[` +
		`{"id":"i-n1-1","node":"n1","running":true,"attach_limit":3,"devices":{"v":"/dev/xvdba"}}],` +
		`"volumes":[{"id":"v","mode":"exclusive"},{"id":"w","mode":"multi-node","uncommitted":true}],` +
		`"counters":{"calls":{"attach":1},"attach_new":1,"detach_new":0}}`
	mustNil(t, os.WriteFile(path, []byte(old), 0o600))
	c := mustOpen(t, Config{StatePath: path})
	if c.Tag() != "me" || !c.Uncommitted("w") || c.Calls().AttachNew != 1 {
		t.Fatalf("version 1 state not loaded: tag %q, calls %+v", c.Tag(), c.Calls())
	}
	(&fixture{c: c}).attach(t, "w", "i-n1-1")
	c2 := mustOpen(t, Config{StatePath: path})
	if got, want := snapshot(c2), snapshot(c); !reflect.DeepEqual(got, want) {
		t.Errorf("reopened\n%+v\nwant\n%+v", got, want)
	}
}

// TestStateSurvivesSIGKILLUnderLoad runs a durable cloud in a child
// process in which many goroutines create, attach and detach volumes and
// print each change once its call returned; it is killed with SIGKILL in
// the middle, and the reopened state has every acknowledged change.
func TestStateSurvivesSIGKILLUnderLoad(t *testing.T) {
	const envPath = "TETHER_SIM_LOAD_CHILD"
	const workers, killAfter = 16, 600
	if path := os.Getenv(envPath); path != "" {
		loadChild(path, workers)
		return
	}
	path := filepath.Join(t.TempDir(), "cloud.json")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStateSurvivesSIGKILLUnderLoad$")
	cmd.Env = append(os.Environ(), envPath+"="+path)
	stdin, err := cmd.StdinPipe()
	mustNil(t, err)
	stdout, err := cmd.StdoutPipe()
	mustNil(t, err)
	mustNil(t, cmd.Start())
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	acks := make(map[string]bool) // "create v", "attach v dev", "detach v"
	var last []string
	sc := bufio.NewScanner(stdout)
	for n := 0; n < killAfter && sc.Scan(); {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "ack "); ok {
			acks[rest] = true
			n++
			continue
		}
		last = append(last, line)
	}
	mustNil(t, cmd.Process.Kill())
	if len(acks) < killAfter {
		t.Fatalf("child acknowledged only %d changes: %v %v", len(acks), sc.Err(), last)
	}

	c := mustOpen(t, Config{StatePath: path}) // validates the state
	var attachesAcked int
	for ack := range acks {
		f := strings.Fields(ack)
		vol := cloud.VolumeID(f[1])
		_, at, exists := c.Volume(vol)
		switch f[0] {
		case "create":
			if !exists {
				t.Errorf("acknowledged creation of %s lost", vol)
			}
		case "attach":
			attachesAcked++
			if !exists {
				t.Errorf("acknowledged attach of %s: volume lost", vol)
			} else if len(at) == 0 && !progressed(c, f[1]) {
				t.Errorf("acknowledged attach of %s lost", vol)
			}
		case "detach":
			if len(at) != 0 {
				t.Errorf("acknowledged detach of %s lost: attached to %v", vol, at)
			}
		}
	}
	if got := c.Calls().AttachNew; got < attachesAcked {
		t.Errorf("AttachNew = %d after %d acknowledged attaches", got, attachesAcked)
	}
}

// progressed reports whether the reopened state shows that vol's worker
// went on past attaching it: the next volume exists. A worker detaches vol
// only after creating (and attaching) the next one, each change durable
// before the call returns, so a detached vol is legitimate exactly then,
// whether or not the parent read the acknowledgements before the kill.
func progressed(c *Cloud, vol string) bool {
	var w, k int
	if _, err := fmt.Sscanf(vol, "w%d-%d", &w, &k); err != nil {
		return false
	}
	_, _, exists := c.Volume(cloud.VolumeID(fmt.Sprintf("w%d-%d", w, k+1)))
	return exists
}

// loadChild is the child of TestStateSurvivesSIGKILLUnderLoad: each worker
// has an instance and, for k = 0, 1, ..., creates volume w<w>-<k>,
// attaches it, then detaches w<w>-<k-1>, printing each change after its
// call returned. It never returns before its stdin is closed.
func loadChild(path string, workers int) {
	c, err := Open(Config{StatePath: path})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	var out sync.Mutex
	ack := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf("ack "+format+"\n", args...)
	}
	fail := func(err error) {
		out.Lock()
		fmt.Println("error:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	for w := range workers {
		go func() {
			inst, err := c.AddInstanceChecked(cloud.NodeName(fmt.Sprint("n", w)))
			if err != nil {
				fail(err)
			}
			for k := 0; k < 10000; k++ {
				vol := cloud.VolumeID(fmt.Sprintf("w%d-%d", w, k))
				if err := c.CreateVolumeChecked(vol, cloud.Exclusive); err != nil {
					fail(err)
				}
				ack("create %s", vol)
				dev, err := c.Attach(ctx, vol, inst)
				if err != nil {
					fail(err)
				}
				ack("attach %s %s", vol, dev)
				if k > 0 {
					prev := cloud.VolumeID(fmt.Sprintf("w%d-%d", w, k-1))
					if err := c.Detach(ctx, prev, inst); err != nil {
						fail(err)
					}
					ack("detach %s", prev)
				}
			}
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
