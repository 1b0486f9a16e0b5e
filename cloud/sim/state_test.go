package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tether/tether/cloud"
)

// snapshot returns the full state of c (world and counters).
func snapshot(c *Cloud) *state {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked()
}

// world is st without the call counters (Calls, Errors, Throttled), which
// a failed write does not revert.
func world(st *state) *state {
	w := *st
	w.Counters.Calls, w.Counters.Errors, w.Counters.Throttled = nil, nil, nil
	return &w
}

// fileState reads the state the files at path (snapshot and log) hold,
// without writing, as snapshot returns it (no generation).
func fileState(t *testing.T, path string) *state {
	t.Helper()
	st, _, err := readState(path)
	if err != nil {
		t.Fatal(err)
	}
	st.Generation = 0
	return st
}

func mustOpen(t *testing.T, cfg Config) *Cloud {
	t.Helper()
	c, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return c
}

// setAppend replaces the log appender of c (which writes and syncs).
func setAppend(c *Cloud, a func(f *os.File, data []byte) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.appendSync = a
}

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.json")
	clock := newFakeClock()
	cfg := Config{StatePath: path, Now: clock.Now, AttachLimit: 5}
	ctx := context.Background()

	c1 := mustOpen(t, cfg)
	for _, v := range []struct {
		id   cloud.VolumeID
		mode cloud.AccessMode
	}{{"a", cloud.Exclusive}, {"b", cloud.MultiNode}, {"c", cloud.Exclusive}, {"d", cloud.MultiNode}, {"odd", cloud.AccessMode(7)}} {
		mustNil(t, c1.CreateVolumeChecked(v.id, v.mode))
	}
	i1, i2, i3 := c1.AddInstance("n1"), c1.AddInstance("n2"), c1.AddInstance("n3")
	f := &fixture{c: c1}
	f.attach(t, "a", i1) // ba
	f.attach(t, "b", i1) // bb
	f.attach(t, "d", i1) // bc
	f.attach(t, "b", i2)
	f.attach(t, "c", i2)
	f.attach(t, "d", i3)
	f.attach(t, "odd", i3)
	mustNil(t, c1.Detach(ctx, "b", i1)) // leaves a gap at bb on i1
	mustNil(t, c1.Terminate(i3))
	mustNil(t, c1.SetAttachLimit(i2, 2))
	// Failed, injected and throttled calls, and reads.
	_, err := c1.Attach(ctx, "nope", i1)
	checkErr(t, err, cloud.KindNotFound)
	_, err = c1.InstanceID(ctx, "n9")
	checkErr(t, err, cloud.KindNotFound)
	c1.FailNext(MethodDetach, 3, cloud.KindTerminal)
	checkErr(t, c1.Detach(ctx, "a", i1), cloud.KindTerminal)
	c1.SetThrottle(1, 1)
	_, _ = c1.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{i1: {"a"}})
	_, err = c1.InstanceID(ctx, "n1")
	checkErr(t, err, cloud.KindThrottled)
	c1.SetThrottle(0, 0)
	all := []cloud.InstanceID{i1, i2, i3}
	devs1, err := c1.InstanceVolumes(ctx, all)
	mustNil(t, err)

	wantAtt := c1.Attachments()
	wantCalls := c1.Calls()
	wantState := snapshot(c1)
	if wantCalls.Throttled[MethodInstanceID] != 1 || wantCalls.AttachNew != 7 || wantCalls.DetachNew != 1 {
		t.Fatalf("test setup: counters %+v", wantCalls)
	}
	c1 = nil // dropped, as by a killed process
	f.c = nil

	c2 := mustOpen(t, cfg)
	if got := c2.Calls(); !reflect.DeepEqual(got, wantCalls) {
		t.Errorf("Calls after reopen = %+v, want %+v", got, wantCalls)
	}
	if got := c2.Attachments(); !reflect.DeepEqual(got, wantAtt) {
		t.Errorf("Attachments after reopen = %v, want %v", got, wantAtt)
	}
	if got := snapshot(c2); !reflect.DeepEqual(got, wantState) {
		t.Errorf("state after reopen =\n%+v\nwant\n%+v", got, wantState)
	}
	for node, want := range map[cloud.NodeName]cloud.InstanceID{"n1": i1, "n2": i2, "n3": i3} {
		if got, ok := c2.InstanceOf(node); !ok || got != want {
			t.Errorf("InstanceOf(%s) = %s, %v; want %s", node, got, ok, want)
		}
	}
	if !c2.Running(i1) || !c2.Running(i2) || c2.Running(i3) {
		t.Errorf("Running = %v %v %v, want true true false", c2.Running(i1), c2.Running(i2), c2.Running(i3))
	}
	devs2, err := c2.InstanceVolumes(ctx, all) // not throttled, no injected failure left
	mustNil(t, err)
	if !reflect.DeepEqual(devs2, devs1) {
		t.Errorf("InstanceVolumes after reopen = %v, want %v", devs2, devs1)
	}
	if got := devs2[i1]; got["a"] != "/dev/xvdba" || got["d"] != "/dev/xvdbc" {
		t.Errorf("device paths of %s = %v", i1, got)
	}

	// Behaviour follows: modes, limits, device gaps, the ID counter.
	mustNil(t, c2.Detach(ctx, "a", i1)) // the injected failures were not kept
	mustNil(t, c2.CreateVolumeChecked("e", cloud.Exclusive))
	_, err = c2.Attach(ctx, "e", i2)
	checkErr(t, err, cloud.KindLimitReached, "2 of 2")
	f.c = c2
	if dev := f.attach(t, "e", i1); dev != "/dev/xvdba" {
		t.Errorf("next device of %s = %s, want /dev/xvdba", i1, dev)
	}
	_, err = c2.Attach(ctx, "e", i2)
	checkErr(t, err, cloud.KindAttachedElsewhere)
	if id := c2.AddInstance("n4"); id != "i-n4-4" {
		t.Errorf("new instance = %s, want i-n4-4", id)
	}
	mustNil(t, c2.Start(i3))
	if !c2.Running(i3) {
		t.Error("restarted instance not running")
	}
	if got, want := fileState(t, path), snapshot(c2); !reflect.DeepEqual(got, want) {
		t.Errorf("file =\n%+v\nmemory =\n%+v", got, want)
	}
}

// TestStateOneWritePerChange: every provider call writes once (its
// counters changed), admin calls only when they change something, Open
// never. (Sequential changes: one group each.)
func TestStateOneWritePerChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.json")
	c := mustOpen(t, Config{StatePath: path})
	var writes int
	def := c.state.appendAndSync
	setAppend(c, func(f *os.File, data []byte) error {
		writes++
		return def(f, data)
	})
	expect := func(what string, n int) {
		t.Helper()
		if writes != n {
			t.Errorf("%s: %d writes, want %d", what, writes, n)
		}
		writes = 0
	}
	ctx := context.Background()
	i1 := c.AddInstance("n1")
	c.AddInstance("n1")
	expect("add instance twice", 1)
	c.CreateVolume("v", cloud.Exclusive)
	c.CreateVolume("v", cloud.MultiNode)
	expect("create volume twice", 1)
	_, _ = c.Attach(ctx, "v", i1)
	_, _ = c.Attach(ctx, "v", i1)
	_, _ = c.Attach(ctx, "nope", i1)
	_, _ = c.InstanceVolumes(ctx, []cloud.InstanceID{i1})
	expect("four calls", 4)
	c.SetThrottle(1, 1)
	_, _ = c.InstanceID(ctx, "n1")
	_, err := c.InstanceID(ctx, "n1")
	checkErr(t, err, cloud.KindThrottled)
	c.SetThrottle(0, 0)
	expect("a call and a throttled call", 2)
	if got := fileState(t, path).Counters.Throttled[MethodInstanceID]; got != 1 {
		t.Errorf("throttled calls in the file = %d, want 1", got)
	}
	mustNil(t, c.SetAttachLimit(i1, 3))
	mustNil(t, c.SetAttachLimit(i1, 3))
	mustNil(t, c.Start(i1))
	expect("limit, limit again, start running", 1)
	mustNil(t, c.Terminate(i1))
	mustNil(t, c.Terminate(i1))
	mustNil(t, c.Start(i1))
	expect("terminate, terminate again, start", 2)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	c2 := mustOpen(t, Config{StatePath: path})
	if got, want := snapshot(c2), snapshot(c); !reflect.DeepEqual(got, want) {
		t.Errorf("reopened %+v, want %+v", got, want)
	}
}

// failingCloud returns a durable cloud with instances n1 (running, volume
// "x" attached, "m" attached) and n2 (stopped), volumes "x" (exclusive),
// "m" (multi-node) and "y" (detached), and the changes it reports.
func failingCloud(t *testing.T, path string) (*Cloud, *[]Change) {
	t.Helper()
	c := mustOpen(t, Config{StatePath: path, Now: newFakeClock().Now})
	for _, v := range []cloud.VolumeID{"x", "y"} {
		mustNil(t, c.CreateVolumeChecked(v, cloud.Exclusive))
	}
	mustNil(t, c.CreateVolumeChecked("m", cloud.MultiNode))
	i1, i2 := c.AddInstance("n1"), c.AddInstance("n2")
	f := &fixture{c: c}
	f.attach(t, "x", i1)
	f.attach(t, "m", i1)
	mustNil(t, c.Terminate(i2))
	var seen []Change
	c.Observe(func(ch Change) { seen = append(seen, ch) })
	return c, &seen
}

// checkWriteFailures makes every kind of change on c, whose state file
// cannot be written, and checks that each fails, naming path, and changes
// nothing but the call counters, and, if fileKept, that the file at path
// still holds the state of memory.
func checkWriteFailures(t *testing.T, c *Cloud, path string, fileKept bool, seen *[]Change) {
	t.Helper()
	ctx := context.Background()
	before := snapshot(c)
	att := c.Attachments()
	i1, _ := c.InstanceOf("n1")
	i2, _ := c.InstanceOf("n2")
	unchanged := func(what string) {
		t.Helper()
		if got := c.Attachments(); !reflect.DeepEqual(got, att) {
			t.Errorf("%s: Attachments = %v, want unchanged %v", what, got, att)
		}
		if got := snapshot(c); !reflect.DeepEqual(world(got), world(before)) {
			t.Errorf("%s: state =\n%+v\nwant unchanged\n%+v", what, got, before)
		}
		if len(*seen) > 0 {
			t.Errorf("%s: observers saw unwritten changes %+v", what, *seen)
		}
		if !fileKept {
			return
		}
		if got := fileState(t, path); !reflect.DeepEqual(world(got), world(before)) {
			t.Errorf("%s: file =\n%+v\nwant unchanged\n%+v", what, got, before)
		}
	}
	failed := func(what string, err error, kind cloud.Kind) {
		t.Helper()
		checkErr(t, err, kind, path)
		if !errors.Is(err, cloud.ErrRetryable) {
			t.Errorf("%s: %v does not wrap cloud.ErrRetryable", what, err)
		}
		unchanged(what)
	}
	dev, err := c.Attach(ctx, "y", i1)
	failed("attach", err, cloud.KindRetryable)
	if dev != "" {
		t.Errorf("failed attach returned device %q", dev)
	}
	_, err = c.Attach(ctx, "m", i1) // idempotent; its counter is not written
	failed("attach again", err, cloud.KindRetryable)
	failed("detach", c.Detach(ctx, "x", i1), cloud.KindRetryable)
	_, err = c.InstanceVolumes(ctx, []cloud.InstanceID{i1})
	failed("read", err, cloud.KindRetryable)
	_, err = c.Attach(ctx, "nope", i1)
	failed("attach unknown volume", err, cloud.KindNotFound)
	failed("terminate", c.Terminate(i1), cloud.KindRetryable)
	failed("start", c.Start(i2), cloud.KindRetryable)
	failed("set attach limit", c.SetAttachLimit(i1, 1), cloud.KindRetryable)
	id, err := c.AddInstanceChecked("n3")
	failed("add instance", err, cloud.KindRetryable)
	if id != "" || c.AddInstance("n3") != "" {
		t.Errorf("AddInstance returned an instance it could not write")
	}
	ids, err := c.AddInstances([]cloud.NodeName{"n1", "n3", "n4"})
	failed("add instances", err, cloud.KindRetryable)
	if ids != nil {
		t.Errorf("AddInstances returned instances it could not write: %v", ids)
	}
	if _, ok := c.InstanceOf("n4"); ok {
		t.Errorf("AddInstances left n4 in memory after its write failed")
	}
	failed("create volume", c.CreateVolumeChecked("z", cloud.Exclusive), cloud.KindRetryable)
	c.CreateVolume("z", cloud.Exclusive)
	unchanged("create volume unchecked")
	c.SetThrottle(1, 1)
	_, _ = c.InstanceID(ctx, "n1") // takes the only token
	_, err = c.InstanceID(ctx, "n1")
	failed("throttled", err, cloud.KindThrottled)
	c.SetThrottle(0, 0)

	calls := c.Calls()
	if calls.Calls[MethodAttach] != before.Counters.Calls[MethodAttach]+3 ||
		calls.Errors[MethodAttach] != before.Counters.Errors[MethodAttach]+3 ||
		calls.Throttled[MethodInstanceID] != 1 {
		t.Errorf("failed calls not counted: %+v (before %+v)", calls, before.Counters)
	}
}

// TestStateWriteFailureDirGone: the state directory disappears; every
// change fails and is undone; once it is back the next change writes
// everything, counters included.
func TestStateWriteFailureDirGone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	mustNil(t, os.Mkdir(dir, 0o700))
	path := filepath.Join(dir, "cloud.json")
	c, seen := failingCloud(t, path)
	mustNil(t, os.RemoveAll(dir))

	checkWriteFailures(t, c, path, false, seen)
	i1, _ := c.InstanceOf("n1")
	_, err := c.Attach(context.Background(), "y", i1)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap the cause", err)
	}

	mustNil(t, os.Mkdir(dir, 0o700))
	(&fixture{c: c}).attach(t, "y", i1)
	if len(*seen) != 1 || (*seen)[0].Volume != "y" || !(*seen)[0].Attached {
		t.Errorf("observed %+v, want the attach of y", *seen)
	}
	c2 := mustOpen(t, Config{StatePath: path})
	if got, want := snapshot(c2), snapshot(c); !reflect.DeepEqual(got, want) {
		t.Errorf("reopened =\n%+v\nwant\n%+v", got, want)
	}
}

// TestStateWriteFailureReadOnly: the directory is read-only (a chmod, or
// as root a read-only bind mount), the file keeps the last state written,
// which is what memory holds, and every failure wraps the cause.
func TestStateWriteFailureReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	mustNil(t, os.Mkdir(dir, 0o700))
	path := filepath.Join(dir, "cloud.json")
	c, seen := failingCloud(t, path)
	cause := readOnlyDir(t, dir)

	checkWriteFailures(t, c, path, true, seen)
	i1, _ := c.InstanceOf("n1")
	_, err := c.Attach(context.Background(), "y", i1)
	checkErr(t, err, cloud.KindRetryable, path)
	if !errors.Is(err, cause) || !errors.Is(err, cloud.ErrRetryable) {
		t.Errorf("error %v does not wrap both the cause (%v) and cloud.ErrRetryable", err, cause)
	}
	if got, want := fileState(t, path), snapshot(c); !reflect.DeepEqual(world(got), world(want)) {
		t.Errorf("file =\n%+v\nmemory =\n%+v", got, want)
	}
}

// TestStateWriteFailureAfterWrite: the append fails, before writing or
// after (the fsync failed); the change is undone and the log cut back to
// the last durable state.
func TestStateWriteFailureAfterWrite(t *testing.T) {
	for _, tt := range []struct {
		name    string
		written bool
	}{{"before write", false}, {"after write", true}} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cloud.json")
			c, seen := failingCloud(t, path)
			setAppend(c, func(f *os.File, data []byte) error {
				if tt.written {
					if _, err := f.Write(data); err != nil {
						return err
					}
				}
				return errors.New("injected write failure")
			})
			checkWriteFailures(t, c, path, true, seen)
			if got, want := fileState(t, path), snapshot(c); !reflect.DeepEqual(world(got), world(want)) {
				t.Errorf("file =\n%+v\nmemory =\n%+v", got, want)
			}
		})
	}
}

func TestStateCorrupt(t *testing.T) {
	valid := `{"version":1,"seq":2,"instances":[` +
		`{"id":"i-n1-1","node":"n1","running":true,"attach_limit":3,"devices":{"v":"/dev/xvdba"}},` +
		`{"id":"i-n2-2","node":"n2","running":true,"attach_limit":3}],` +
		`"volumes":[{"id":"v","mode":"exclusive"}],"counters":{"attach_new":1,"detach_new":0}}`
	tests := []struct {
		name, data, want string
	}{
		{"empty", "", "not a state file"},
		{"garbage", "{not json", "not a state file"},
		{"truncated", valid[:len(valid)/2], "not a state file"},
		{"trailing data", valid + "{}", "not a state file"},
		{"no version", `{"seq":0}`, "no version"},
		{"future version", `{"version":3}`, "unsupported version 3"},
		{"version 1 with a generation", strings.Replace(valid, `"seq":2`, `"seq":2,"generation":4`, 1), "version 1 snapshot has no generation"},
		{"unknown field", `{"version":1,"extra":true}`, "unknown field"},
		{"bad mode", strings.Replace(valid, `"exclusive"`, `"shared"`, 1), "unknown access mode"},
		{"unknown volume", strings.Replace(valid, `{"v":`, `{"w":`, 1), `volume "w" not found`},
		{"node twice", strings.Replace(valid, `"node":"n2"`, `"node":"n1"`, 1), `node "n1" backed by both`},
		{"id twice", strings.Replace(valid, `"id":"i-n2-2"`, `"id":"i-n1-1"`, 1), "listed twice"},
		{"stopped with volumes", strings.Replace(valid, `"running":true`, `"running":false`, 1), "stopped with 1 volumes"},
		{"exclusive twice", strings.Replace(valid, `"attach_limit":3}`, `"attach_limit":3,"devices":{"v":"/dev/xvdba"}}`, 1), "attached to both"},
		{"negative limit", strings.Replace(valid, `"attach_limit":3}`, `"attach_limit":-1}`, 1), "negative attach limit"},
		{"counter", strings.Replace(valid, `"seq":2`, `"seq":1`, 1), "instance counter 1"},
	}
	dir := t.TempDir()
	if _, err := decodeState([]byte(valid)); err != nil {
		t.Fatalf("the valid base does not load: %v", err)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("state-%d.json", i))
			mustNil(t, os.WriteFile(path, []byte(tt.data), 0o600))
			c, err := Open(Config{StatePath: path})
			if err == nil || c != nil {
				t.Fatalf("Open = %v, %v; want an error", c, err)
			}
			for _, part := range []string{path, tt.want} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not mention %q", err, part)
				}
			}
			if data, _ := os.ReadFile(path); string(data) != tt.data {
				t.Error("Open changed the corrupt file")
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		path := filepath.Join(dir, "a-directory")
		mustNil(t, os.Mkdir(path, 0o700))
		if _, err := Open(Config{StatePath: path}); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Open of a directory: %v, want an error naming it", err)
		}
	})
	t.Run("New panics", func(t *testing.T) {
		path := filepath.Join(dir, "garbage.json")
		mustNil(t, os.WriteFile(path, []byte("{not json"), 0o600))
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), path) {
				t.Errorf("New recovered %v, want a panic naming %s", r, path)
			}
		}()
		New(Config{StatePath: path})
	})
}

func TestStateFileMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloud.json")
	c := mustOpen(t, Config{StatePath: path})
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a new cloud wrote the file: %v", err)
	}
	c.AddInstance("n1")
	checkMode := func() {
		t.Helper()
		for _, p := range []string{path, path + ".log"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode(); got != 0o600 {
				t.Errorf("mode of %s = %v, want -rw-------", p, got)
			}
		}
	}
	checkMode()
	// A compaction (here: Close) writes both files again, with that mode.
	mustNil(t, os.Chmod(path, 0o644))
	mustNil(t, os.Chmod(path+".log", 0o644))
	c.AddInstance("n2")
	mustNil(t, c.Close())
	checkMode()
	entries, err := os.ReadDir(dir)
	mustNil(t, err)
	if len(entries) != 2 || entries[0].Name() != "cloud.json" || entries[1].Name() != "cloud.json.log" {
		t.Errorf("directory holds %v, want only the snapshot and its log", entries)
	}
}

// TestStateStaleTemps: Open removes the temporary files of a process
// killed while writing, and nothing else.
func TestStateStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloud.json")
	stale := filepath.Join(dir, ".cloud.json.tmp-12345")
	staleLog := filepath.Join(dir, ".cloud.json.log.tmp-12345")
	other := filepath.Join(dir, ".other.json.tmp-1")
	for _, p := range []string{stale, staleLog, other} {
		mustNil(t, os.WriteFile(p, []byte("{"), 0o600))
	}
	mustOpen(t, Config{StatePath: path})
	for _, p := range []string{stale, staleLog} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stale temp file %s kept: %v", p, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("unrelated file removed: %v", err)
	}
}

// TestStateConcurrent: concurrent calls on a durable cloud; the file ends
// equal to memory.
func TestStateConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.json")
	c := mustOpen(t, Config{StatePath: path})
	c.CreateVolume("shared", cloud.MultiNode)
	var mu sync.Mutex
	var observed int
	c.Observe(func(Change) { mu.Lock(); observed++; mu.Unlock() })
	const workers, rounds = 6, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			inst := c.AddInstance(cloud.NodeName(fmt.Sprint("n", w)))
			own := cloud.VolumeID(fmt.Sprint("v", w))
			c.CreateVolume(own, cloud.Exclusive)
			for range rounds {
				for _, vol := range []cloud.VolumeID{own, "shared"} {
					if _, err := c.Attach(ctx, vol, inst); err != nil {
						t.Errorf("attach: %v", err)
					}
				}
				if err := c.Detach(ctx, own, inst); err != nil {
					t.Errorf("detach: %v", err)
				}
			}
		})
	}
	wg.Wait()
	calls := c.Calls()
	if want := workers * (rounds + 1); calls.AttachNew != want || observed != want+workers*rounds {
		t.Errorf("AttachNew = %d, observed %d; want %d, %d", calls.AttachNew, observed, want, want+workers*rounds)
	}
	if got, want := fileState(t, path), snapshot(c); !reflect.DeepEqual(got, want) {
		t.Errorf("file =\n%+v\nmemory =\n%+v", got, want)
	}
}

// TestStateSurvivesSIGKILL runs a cloud in a child process that attaches
// volumes and acknowledges each attach once Attach returned, kills it with
// SIGKILL mid-way, and checks that the reopened cloud has every
// acknowledged attach.
func TestStateSurvivesSIGKILL(t *testing.T) {
	const envPath = "TETHER_SIM_STATE_CHILD"
	const vols, killAfter = 60, 15
	if path := os.Getenv(envPath); path != "" {
		sigkillChild(path, vols)
		return
	}
	path := filepath.Join(t.TempDir(), "cloud.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStateSurvivesSIGKILL$")
	cmd.Env = append(os.Environ(), envPath+"="+path)
	stdin, err := cmd.StdinPipe()
	mustNil(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	mustNil(t, err)
	mustNil(t, cmd.Start())
	acked := make(map[cloud.VolumeID]string)
	sc := bufio.NewScanner(stdout)
	for len(acked) < killAfter && sc.Scan() {
		var vol, dev string
		if _, err := fmt.Sscanf(sc.Text(), "ack %s %s", &vol, &dev); err == nil {
			acked[cloud.VolumeID(vol)] = dev
		}
	}
	mustNil(t, cmd.Process.Kill())
	_ = cmd.Wait()
	if len(acked) < killAfter {
		t.Fatalf("child acknowledged only %d attaches: %v", len(acked), sc.Err())
	}

	c := mustOpen(t, Config{StatePath: path})
	inst, ok := c.InstanceOf("n1")
	if !ok || !c.Running(inst) {
		t.Fatalf("instance of n1 lost: %q, %v", inst, ok)
	}
	devs, err := c.InstanceVolumes(context.Background(), []cloud.InstanceID{inst})
	mustNil(t, err)
	for vol, dev := range acked {
		if devs[inst][vol] != dev {
			t.Errorf("acknowledged attach of %s at %s: after restart %q", vol, dev, devs[inst][vol])
		}
	}
	if calls := c.Calls(); calls.AttachNew < len(acked) || calls.Calls[MethodAttach] < len(acked) {
		t.Errorf("counters lost: %+v after %d acknowledged attaches", calls, len(acked))
	}
}

// sigkillChild is the child of TestStateSurvivesSIGKILL: it never returns
// before its stdin is closed.
func sigkillChild(path string, vols int) {
	c, err := Open(Config{StatePath: path, AttachLimit: vols})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	inst, err := c.AddInstanceChecked("n1")
	if err != nil {
		fmt.Println("add instance:", err)
		os.Exit(1)
	}
	for i := range vols {
		vol := cloud.VolumeID(fmt.Sprint("v", i))
		if err := c.CreateVolumeChecked(vol, cloud.Exclusive); err != nil {
			fmt.Println("create volume:", err)
			os.Exit(1)
		}
		dev, err := c.Attach(context.Background(), vol, inst)
		if err != nil {
			fmt.Println("attach:", err)
			os.Exit(1)
		}
		fmt.Printf("ack %s %s\n", vol, dev)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// BenchmarkStateAttachDetach measures one Attach plus one Detach (two
// state changes) with and without a state file, on a small cloud and on
// one with 100 instances and 1,000 attachments.
func BenchmarkStateAttachDetach(b *testing.B) {
	for _, size := range []struct {
		name        string
		insts, vols int
	}{{"small", 1, 0}, {"large", 100, 10}} {
		for _, durable := range []bool{false, true} {
			name := size.name + "/memory"
			cfg := Config{}
			if durable {
				name = size.name + "/file"
				cfg.StatePath = filepath.Join(b.TempDir(), "cloud.json")
			}
			b.Run(name, func(b *testing.B) {
				c := mustOpenB(b, cfg)
				ctx := context.Background()
				for i := range size.insts {
					inst := c.AddInstance(cloud.NodeName(fmt.Sprint("n", i)))
					for j := range size.vols {
						vol := cloud.VolumeID(fmt.Sprintf("v%d-%d", i, j))
						c.CreateVolume(vol, cloud.Exclusive)
						if _, err := c.Attach(ctx, vol, inst); err != nil {
							b.Fatal(err)
						}
					}
				}
				c.CreateVolume("bench", cloud.Exclusive)
				inst, _ := c.InstanceOf("n0")
				for b.Loop() {
					if _, err := c.Attach(ctx, "bench", inst); err != nil {
						b.Fatal(err)
					}
					if err := c.Detach(ctx, "bench", inst); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func mustOpenB(b *testing.B, cfg Config) *Cloud {
	b.Helper()
	c, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
