package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/cloud/testkit"
)

// The stage tools' wrappers of TestLoopUpSIGKILLMidStage, which make its
// kill point deterministic, and the stand-in for an orphaned tool that
// still has the device open.

// stageTools are wrapper scripts of a stage's tools, put first on a
// process's PATH. Each runs its real tool and appends the call and its
// exit status to a log (calls), unless it is armed (arm): then its next
// run records that it started (waitStarted) and blocks until released
// (release), runs the real tool with its output to a file, and records
// its exit status. A closed FIFO (the test's cleanup) makes a blocked
// wrapper exit 99 without running the tool. A logged run that starts
// while the test says it holds the device (markHeld) is marked so in the
// log (heldMark).
type stageTools struct {
	t    *testing.T
	dir  string   // armed, claimed, started, release (the FIFO), orphan.log, done, calls, held
	bin  string   // the wrappers
	fifo *os.File // held open read-write: a wrapper's read blocks until a line comes
}

const wrapperScript = `#!/bin/sh
# tether's test wrapper of %[1]s (TestLoopUpSIGKILLMidStage).
d='%[2]s'
if [ "$(cat "$d/armed" 2>/dev/null)" = '%[1]s' ] && mv "$d/armed" "$d/claimed" 2>/dev/null; then
	echo "$$ $*" >"$d/started.tmp" && mv "$d/started.tmp" "$d/started"
	read -r _ <"$d/release" || exit 99
	'%[3]s' "$@" >"$d/orphan.log" 2>&1
	rc=$?
	echo "$rc" >"$d/done.tmp" && mv "$d/done.tmp" "$d/done"
	exit "$rc"
fi
h=
[ -e "$d/held" ] && h='%[4]s'
'%[3]s' "$@"
rc=$?
echo "%[1]s $* => $rc$h" >>"$d/calls"
exit "$rc"
`

// heldMark ends the logged call of a run that started while the test
// held the device (stageTools.markHeld).
const heldMark = " (started while held)"

func newStageTools(t *testing.T, dir string, names ...string) *stageTools {
	t.Helper()
	s := &stageTools{t: t, dir: dir, bin: filepath.Join(dir, "bin")}
	if err := os.MkdirAll(s.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		path := realTool(t, name)
		script := fmt.Sprintf(wrapperScript, name, dir, path, heldMark)
		if err := os.WriteFile(filepath.Join(s.bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	release := filepath.Join(dir, "release")
	if err := unix.Mkfifo(release, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(release, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.fifo = f
	t.Cleanup(func() { s.fifo.Close() })
	return s
}

// realTool finds name as the block mounter does: on PATH, then in
// /usr/sbin and /sbin.
func realTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); unix.Access(p, unix.X_OK) == nil {
			return p
		}
	}
	t.Fatalf("%s not found (this test needs util-linux and e2fsprogs)", name)
	return ""
}

// arm makes the next run of tool block.
func (s *stageTools) arm(tool string) {
	s.t.Helper()
	tmp := filepath.Join(s.dir, "armed.tmp")
	if err := os.WriteFile(tmp, []byte(tool+"\n"), 0o600); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, "armed")); err != nil {
		s.t.Fatal(err)
	}
}

// started is what a blocked wrapper recorded.
type started struct {
	pid  int
	args []string
}

// waitStarted waits until the armed tool has started and blocks.
func (s *stageTools) waitStarted(limit time.Duration) started {
	s.t.Helper()
	var b []byte
	testkit.Eventually(s.t, limit, func() bool {
		var err error
		b, err = os.ReadFile(filepath.Join(s.dir, "started"))
		return err == nil
	}, "the armed stage tool started")
	f := strings.Fields(string(b))
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		s.t.Fatalf("started: %q: %v", b, err)
	}
	return started{pid: pid, args: f[1:]}
}

// release lets the blocked tool go on, waits until it has run the real
// tool to its end, and returns its exit status.
func (s *stageTools) release(limit time.Duration) int {
	s.t.Helper()
	if _, err := s.fifo.WriteString("go\n"); err != nil {
		s.t.Fatal(err)
	}
	var b []byte
	testkit.Eventually(s.t, limit, func() bool {
		var err error
		b, err = os.ReadFile(filepath.Join(s.dir, "done"))
		return err == nil
	}, "the released stage tool done")
	rc, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		s.t.Fatalf("done: %q: %v", b, err)
	}
	if log, _ := os.ReadFile(filepath.Join(s.dir, "orphan.log")); len(log) > 0 {
		s.t.Logf("its output: %s", strings.TrimSpace(string(log)))
	}
	return rc
}

// markHeld makes the runs that start from now on, until the returned
// function (or the test's end) is called, marked in the log with
// heldMark. Call it once the device is held, and unmark before letting
// go: a run so marked certainly started while the device was held.
func (s *stageTools) markHeld() func() {
	s.t.Helper()
	held := filepath.Join(s.dir, "held")
	if err := os.WriteFile(held, nil, 0o600); err != nil {
		s.t.Fatal(err)
	}
	var once sync.Once
	unmark := func() {
		once.Do(func() {
			if err := os.Remove(held); err != nil {
				s.t.Error(err)
			}
		})
	}
	s.t.Cleanup(unmark)
	return unmark
}

// calls lists the runs of the tools that were not armed, in order: the
// tool, its arguments, "=>", its exit status, and heldMark if it started
// while the device was held (markHeld). A run is listed once it has
// ended.
func (s *stageTools) calls() []string {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, "calls"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.t.Fatal(err)
	}
	return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
}

// holdExclusive opens the block device dev exclusively (O_EXCL), as
// e2fsck and mkfs.ext4 do: mount(2) and other exclusive opens of it fail
// with EBUSY until the returned function (or the test's end) closes it.
func holdExclusive(t *testing.T, dev string) func() {
	t.Helper()
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening %s exclusively: %v", dev, err)
	}
	var once sync.Once
	done := func() { once.Do(func() { unix.Close(fd) }) }
	t.Cleanup(done)
	return done
}
