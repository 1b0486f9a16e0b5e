package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/cloud/testkit"
)

type eventsJSON struct {
	Events []struct {
		Kind, Name, Type, Node, Message string
		ObjectUID                       string `json:"object_uid"`
	}
	OmittedEvents int `json:"omitted_events"`
}

func getEventsJSON(t *testing.T, data string, args ...string) eventsJSON {
	t.Helper()
	out, err := run(t, data, append([]string{"get", "events", "-o", "json"}, args...)...)
	if err != nil {
		t.Fatalf("get events %v: %v\n%s", args, err, out)
	}
	var res eventsJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("get events -o json: %v\n%s", err, out)
	}
	return res
}

func applyYAML(t *testing.T, data, yaml string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, data, "apply", "-f", file); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
}

// tether get events lists the store's events (table and JSON), of one
// object's current incarnation when named; --watch prints the list, then
// new events, and ends cleanly on SIGINT.
func TestGetEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	data := t.TempDir()
	t.Cleanup(func() { teardown(t, data) })
	tetherUp(t, data)
	applyYAML(t, data, "kind: Volume\nname: v1\n---\nkind: Workload\nname: w1\nnode: n1\nvolumes:\n  - name: v1\n")
	testkit.Eventually(t, 30*time.Second, func() bool {
		out, err := run(t, data, "get", "events")
		return err == nil && strings.Contains(out, "SuccessfulAttachVolume") && strings.Contains(out, "volume/v1") &&
			strings.Contains(out, "SuccessfulMountVolume") && strings.Contains(out, "workload/w1")
	}, "v1 attached and w1 mounted, in get events")
	out, _ := run(t, data, "get", "events")
	if lines := strings.Split(out, "\n"); !strings.HasPrefix(lines[0], "TIME ") || !strings.Contains(lines[0], "REASON") {
		t.Errorf("get events: first line %q, want the header", lines[0])
	}
	for _, e := range getEventsJSON(t, data, "volume/v1").Events {
		if e.Kind != "volume" || e.Name != "v1" || e.ObjectUID == "" {
			t.Errorf("get events volume/v1 listed %+v", e)
		}
	}

	// w1 deleted and applied again on n2 is another incarnation: none of
	// the first one's events (on n1) are its.
	if out, err := run(t, data, "delete", "workload", "w1"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	applyYAML(t, data, "kind: Workload\nname: w1\nnode: n2\nvolumes:\n  - name: v1\n")
	testkit.Eventually(t, 60*time.Second, func() bool {
		for _, e := range getEventsJSON(t, data, "workload/w1").Events {
			if e.Type == "SuccessfulMountVolume" && e.Node == "n2" {
				return true
			}
		}
		return false
	}, "w1 mounted on n2")
	for _, e := range getEventsJSON(t, data, "workload/w1").Events {
		if e.Node == "n1" {
			t.Errorf("get events workload/w1 shows the deleted incarnation's %+v", e)
		}
	}
	for _, e := range getEventsJSON(t, data).Events {
		if e.Kind == "workload" && e.Name == "w1" && e.Node == "n1" {
			t.Errorf("get events shows the deleted incarnation's %+v", e)
		}
	}

	for _, bad := range [][]string{{"get", "events", "volume/"}, {"get", "events", "disk/d1"}, {"get", "volumes", "--watch"}, {"get", "events", "volume/nope"}} {
		if out, err := run(t, data, bad...); err == nil {
			t.Errorf("%v succeeded:\n%s", bad, out)
		}
	}

	// --watch: the list, then what comes, until SIGINT.
	w := exec.Command(binary(t), "get", "events", "--watch", "--data-dir", data)
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w.ProcessState == nil {
			_ = w.Process.Kill()
			_ = w.Wait()
		}
	})
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine := func(what string, match func(string) bool) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("get events --watch ended before %s", what)
				}
				if match(l) {
					return
				}
			case <-deadline:
				t.Fatalf("get events --watch: no %s within 60 s", what)
			}
		}
	}
	waitLine("v1's attach from the list", func(l string) bool {
		return strings.Contains(l, "volume/v1") && strings.Contains(l, "SuccessfulAttachVolume")
	})
	applyYAML(t, data, "kind: Volume\nname: v2\n---\nkind: Workload\nname: w2\nnode: n3\nvolumes:\n  - name: v2\n")
	waitLine("v2's attach as it happens", func(l string) bool {
		return strings.Contains(l, "volume/v2") && strings.Contains(l, "SuccessfulAttachVolume")
	})
	if err := w.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("get events --watch after SIGINT: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("get events --watch still running 10 s after SIGINT")
	}
}
