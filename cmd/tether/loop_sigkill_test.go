package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/node/layout"
)

// tether up --cloud loop killed with SIGKILL while node B's stage of a
// moved disk runs one of its tools (blkid's probe, e2fsck's check), then
// started again on the same data directory: the workload runs on B, every
// file written through its mount on A reads back with its checksum, the
// disk was formatted once (never by the restarted process), and the
// kernel shows the disk bound to one loop device, recorded attached to B
// alone, mounted on B once (its stage, and its workload's bind mount of
// it) and nowhere on A.
//
// The kill point is made deterministic by wrapper scripts first on the
// first process's PATH (stageTools): armed for one tool, the next run of
// it records that it started and blocks on a FIFO; the test kills tether
// once the record appears, and checks that the disk is then attached to B
// and mounted nowhere. The tool outlives tether, as a real orphan does:
// released, it runs the real tool to its end before tether starts again,
// this time with wrappers that only log what it runs. Or (held) the
// orphan is taken to still have the device open exclusively, as e2fsck
// and mkfs.ext4 do, when tether starts again: the test holds it so
// (O_EXCL) until the restarted tether reports the device busy (its stage
// refuses a device another program holds, before running any tool on
// it), checks that meanwhile no e2fsck or mkfs.ext4 ran and nothing was
// mounted, then lets go and releases the orphan, whose e2fsck then races
// the restarted tether's retries.
func TestLoopUpSIGKILLMidStage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary on real loop devices")
	}
	for _, tt := range []struct {
		name, tool string
		held       bool
	}{
		{"blkid", "blkid", false},
		{"e2fsck", "e2fsck", false},
		{"e2fsck held at restart", "e2fsck", true},
	} {
		t.Run(tt.name, func(t *testing.T) { sigkillMidStage(t, tt.tool, tt.held) })
	}
}

const (
	sigkillVol   = "data"
	sigkillUID   = "app"
	sigkillFiles = 24 // about 12 MiB of a 32 MiB disk
)

var stageToolNames = []string{"blkid", "e2fsck", "mkfs.ext4"}

func sigkillMidStage(t *testing.T, tool string, held bool) {
	dir, err := filepath.EvalSymlinks(t.TempDir()) // the kernel shows backing files so
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	t.Cleanup(func() { sweepLoop(t, data) }) // registered first: runs last
	t.Cleanup(func() { releaseLoop(t, data) })
	tools := newStageTools(t, filepath.Join(dir, "tools"), stageToolNames...)
	after := newStageTools(t, filepath.Join(dir, "tools-after"), stageToolNames...)

	up := loopUp(t, data, tools.bin)
	applyWorkload(t, data, "n1", true)
	sums := writeChecksummed(t, waitWorkloadOn(t, data, "n1"), sigkillFiles)
	uuid := ext4UUID(t, data)

	dev := killMidStage(t, data, up, tools, tool)
	if held {
		up = restartHeld(t, data, dev, tools, after)
	} else {
		if rc := tools.release(30 * time.Second); rc != 0 {
			t.Fatalf("the orphaned %s exited %d after the kill; want 0 (an ext4 disk, clean after n1 unmounted it)", tool, rc)
		}
		up = loopUp(t, data, after.bin)
	}

	verifyChecksums(t, waitWorkloadOn(t, data, "n2"), sums)
	if got := ext4UUID(t, data); got != uuid {
		t.Errorf("the disk was formatted again: ext4 UUID %s, was %s", got, uuid)
	}
	calls := after.calls()
	t.Logf("the restarted tether ran: %q", calls)
	if slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "mkfs.ext4 ") }) {
		t.Error("the restarted tether ran mkfs.ext4")
	}
	if c := checkedWhileHeld(calls); len(c) > 0 { // those still running when restartHeld looked
		t.Errorf("the restarted tether ran, while another program held the device: %q", c)
	}
	checkServedOnce(t, data, "n2", "n1")
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := up.Wait(); err != nil {
		t.Errorf("graceful shutdown: %v", err)
	}
}

// killMidStage arms tool, moves the workload to n2, SIGKILLs up once n2's
// stage runs the tool, and checks that the kill came in the middle of the
// stage: the disk attached to n2, at the device the tool was given, and
// mounted nowhere. It returns the device.
func killMidStage(t *testing.T, data string, up *exec.Cmd, tools *stageTools, tool string) string {
	t.Helper()
	tools.arm(tool)
	applyWorkload(t, data, "n2", false)
	st := tools.waitStarted(60 * time.Second)
	if err := up.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	up.Wait()
	t.Logf("killed tether while it ran %s %s", tool, strings.Join(st.args, " "))
	dev := attachedTo(t, data, "n2")
	if len(st.args) == 0 || st.args[len(st.args)-1] != dev {
		t.Fatalf("%s ran with %q, not on %s (the disk's device on n2)", tool, st.args, dev)
	}
	if pts := mountsOf(t, dev); len(pts) > 0 {
		t.Fatalf("%s was mounted at %v at the kill: the stage was over", dev, pts)
	}
	return dev
}

// restartHeld starts tether again while dev is open exclusively, as by
// the dead tether's orphaned e2fsck still running. Once the restarted
// tether reports that its stage found dev in use by another program
// (busyEvent), it checks that meanwhile no e2fsck or mkfs.ext4 ran (the
// wrappers mark a run that starts while dev is held) and nothing was
// mounted from dev; then it lets go of dev and releases the orphan, whose
// e2fsck then races the restarted tether's retries.
func restartHeld(t *testing.T, data, dev string, tools, after *stageTools) *exec.Cmd {
	t.Helper()
	letGo := holdExclusive(t, dev)
	unmark := after.markHeld() // within the hold: a marked run certainly ran while dev was held
	up := loopUp(t, data, after.bin)
	var busy string
	testkit.Eventually(t, 60*time.Second, func() bool {
		busy = busyEvent(t, data, "n2", dev)
		return busy != ""
	}, "the restarted tether's stage on n2 refusing %s as in use by another program", dev)
	t.Logf("while %s was held, the restarted tether reported: %s", dev, busy)
	if c := checkedWhileHeld(after.calls()); len(c) > 0 {
		t.Fatalf("the restarted tether ran, while another program held %s: %q", dev, c)
	}
	if pts := mountsOf(t, dev); len(pts) > 0 {
		t.Fatalf("%s was mounted at %v while another program had it open exclusively", dev, pts)
	}
	unmark()
	letGo()
	t.Logf("the orphaned tool, released once the device was let go, exited %d", tools.release(30*time.Second))
	return up
}

// checkedWhileHeld lists the logged runs of e2fsck and mkfs.ext4 that
// started while the test held the device (stageTools.markHeld).
func checkedWhileHeld(calls []string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasSuffix(c, heldMark) && (strings.HasPrefix(c, "e2fsck ") || strings.HasPrefix(c, "mkfs.ext4 ")) {
			out = append(out, c)
		}
	}
	return out
}

// busyEvent is the first of node n's events, as tether describe shows
// them, that reports a failed mount (a stage's: it has no workload)
// because dev is in use by another program (mount.ErrDeviceBusy), or "".
func busyEvent(t *testing.T, data, n, dev string) string {
	t.Helper()
	out, err := run(t, data, "describe", "node", n)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[1] == "Warning" && f[2] == "FailedMount" && f[3] == n &&
			strings.Contains(line, dev+" is in use by another program") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// loopUp starts `tether up --cloud loop` with two nodes on data, with bin
// (if set) first on its PATH, and waits until its API answers. The
// process is killed at cleanup if it still runs.
func loopUp(t *testing.T, data, bin string) *exec.Cmd {
	t.Helper()
	os.Remove(filepath.Join(data, process.AddrFile))
	cmd := exec.Command(binary(t), "up", "--cloud", "loop", "--nodes", "2", "--loop-volume-size", "32MiB",
		"--data-dir", data, "--api-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
		"--sync-period", "1s", "--log-level", "warn")
	if bin != "" {
		cmd.Env = append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			for _, kind := range []string{"volumes", "workloads", "nodes"} {
				if o, err := run(t, data, "get", kind); err == nil {
					t.Logf("tether get %s:\n%s", kind, o)
				}
			}
			t.Logf("tether up (pid %d) output:\n%s", cmd.Process.Pid, out.String())
		}
	})
	testkit.Eventually(t, 30*time.Second, func() bool {
		if cmd.ProcessState != nil {
			t.Fatalf("tether up exited: %s\n%s", cmd.ProcessState, out.String())
		}
		_, err := run(t, data, "get", "nodes")
		return err == nil
	}, "tether up --cloud loop answering")
	return cmd
}

// applyWorkload puts the workload on node n (with its volume, if vol).
func applyWorkload(t *testing.T, data, n string, vol bool) {
	t.Helper()
	spec := "kind: Workload\nname: " + sigkillUID + "\nnode: " + n + "\nvolumes:\n  - name: " + sigkillVol + "\n"
	if vol {
		spec = "kind: Volume\nname: " + sigkillVol + "\naccessMode: ReadWriteOnce\n---\n" + spec
	}
	file := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, data, "apply", "-f", file); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
}

// waitWorkloadOn waits until tether says the workload runs on n and the
// kernel shows its volume mounted at its path there, and returns the path.
func waitWorkloadOn(t *testing.T, data, n string) string {
	t.Helper()
	l, err := layout.New(filepath.Join(data, "nodes", n))
	if err != nil {
		t.Fatal(err)
	}
	pod, err := l.PodVolume(sigkillUID, process.LoopPlugin, sigkillVol)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 90*time.Second, func() bool {
		return workloadPhase(t, data, n) == "Running" && slices.Contains(mountPoints(t), pod)
	}, "the workload running on %s with its volume mounted", n)
	return pod
}

// workloadPhase is the workload's phase if tether has it on node n.
func workloadPhase(t *testing.T, data, n string) string {
	out, err := run(t, data, "get", "workloads", "-o", "json")
	if err != nil {
		return ""
	}
	var w struct {
		Workloads []struct {
			Spec  struct{ Name, Node string }
			Phase string
		}
	}
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatalf("get workloads -o json: %v\n%s", err, out)
	}
	for _, x := range w.Workloads {
		if x.Spec.Name == sigkillUID && x.Spec.Node == n {
			return x.Phase
		}
	}
	return ""
}

// checkServedOnce checks the kernel and the cloud's state file: the disk
// is bound to one loop device, recorded attached to node on alone, its
// filesystem mounted once there (the stage) and shown to the workload by
// one bind mount, and nothing at all is mounted on node off.
func checkServedOnce(t *testing.T, data, on, off string) {
	t.Helper()
	dev := attachedTo(t, data, on)
	if devs := devicesOf(t, data); !slices.Equal(devs, []string{dev}) {
		t.Errorf("the disk's image is bound to %v; want %s alone", devs, dev)
	}
	root := filepath.Join(data, "nodes", on)
	l, err := layout.New(root)
	if err != nil {
		t.Fatal(err)
	}
	stage, err := l.GlobalMount(process.LoopPlugin, sigkillVol)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := l.PodVolume(sigkillUID, process.LoopPlugin, sigkillVol)
	if err != nil {
		t.Fatal(err)
	}
	if pts := mountsOf(t, dev); !slices.Equal(pts, []string{stage, pod}) {
		t.Errorf("%s is mounted at %v; want once on %s: at %s and bound at %s", dev, pts, on, stage, pod)
	}
	offDir := filepath.Join(data, "nodes", off) + "/"
	for _, p := range mountPoints(t) {
		if strings.HasPrefix(p, offDir) {
			t.Errorf("%s is mounted on %s", p, off)
		}
	}
}
