package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Arguments no server could accept are usage errors (exit 2), found before
// anything is dialled or started: no tether runs here, and the data
// directory given is never created.
func TestUsageErrorsBeforeAnything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never")
	client := []string{"--data-dir", dir}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "widgets"}, `unknown kind "widgets": want volumes, nodes, workloads`},
		{[]string{"get", "volumes", ""}, `name "": want an object's name`},
		{[]string{"describe", "widget", "a"}, `unknown kind "widget"`},
		{[]string{"delete", "workload", ""}, `name "": want an object's name`},
		{[]string{"delete", "workload", "a", " "}, `name " ": want an object's name`},
		{[]string{"delete", "gadget", "a"}, `unknown kind "gadget"`},
		{[]string{"node", "terminate", ""}, `name "": want an object's name`},
		{[]string{"up", "--api-addr", "127.0.0.1:7171", "--metrics-addr", "127.0.0.1:7171"}, "--metrics-addr 127.0.0.1:7171: the same address as --api-addr: want another port"},
		{[]string{"up", "--api-addr", "127.0.0.1:7171", "--metrics-addr", ":7171"}, "--metrics-addr :7171: the same address as --api-addr"},
	} {
		code, out := execute("", append(tt.args, client...)...)
		if code != exitUsage || !strings.Contains(out, tt.want) {
			t.Errorf("tether %q: exit %d, %q; want exit %d and %q", tt.args, code, out, exitUsage, tt.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Fatalf("tether %q created %s", tt.args, dir)
		}
	}
	// Port 0 (any free port) may repeat.
	if err := validateUpArgs(t, "--api-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"); err != nil {
		t.Errorf("two port-0 addresses: %v", err)
	}
}

// validateUpArgs parses args as tether up's flags and validates them.
func validateUpArgs(t *testing.T, args ...string) error {
	t.Helper()
	cmd := upCommand()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return validateUp(cmd.Flags())
}
