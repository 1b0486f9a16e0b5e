package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/cloud/testkit"
)

// tether up on a fake CSI driver of raw block volumes that demands each
// volume's volume_context and secrets, driven as an operator does: tether
// apply of a volumeMode Block volume with its csi.volumeAttributes and a
// csi.secretRef (file mode 0600) reaches its workload, the target a
// file; get -o json and describe show the fields and the secretRef's
// name, never a secret; a secrets file opened to 0644 refuses the next
// apply, naming the file and its mode; a changed field is refused; a
// delete unpublishes and removes the target file. The secret is never
// printed, by any command or by tether up.
func TestUpCSIVolumeFields(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const secret = "s3cret-never-printed"
	d := csitest.New(csitest.Config{Nodes: map[string]int64{"node-1": 0}, List: true, ListPublished: true, StageUnstage: true,
		BlockOnly: true, RequireVolumeContext: true, RequireSecrets: map[string]string{"token": secret}})
	ctl, nd := d.Serve(t, ""), d.Serve(t, "node-1")
	d.AddVolume("blk-1")
	d.AddVolume("blk-2")
	data := t.TempDir()
	secrets := filepath.Join(data, process.CSISecretsDir)
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(secrets, "creds.json")
	if err := os.WriteFile(secretFile, []byte(`{"token":"`+secret+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	up, out := startUpCSI(t, data, ctl, nd, "info")
	var printed strings.Builder
	tether := func(args ...string) (string, error) {
		t.Helper()
		o, err := run(t, data, args...)
		printed.WriteString(o)
		t.Logf("$ tether %s\n%s", strings.Join(args, " "), o)
		return o, err
	}
	spec := func(name, vol string, extra string) string {
		p := filepath.Join(t.TempDir(), name)
		doc := "kind: Volume\nname: " + vol + "\nvolumeMode: Block\ncsi:\n  volumeAttributes:\n    " + csitest.VolumeContextKey + ": share-" + vol +
			"\n  secretRef: creds\n" + extra + "---\nkind: Workload\nname: app-" + vol + "\nnode: n1\nvolumes:\n  - name: " + vol + "\n"
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if o, err := tether("apply", "-f", spec("one.yaml", "blk-1", "")); err != nil {
		t.Fatalf("apply: %v\n%s", err, o)
	}
	testkit.Eventually(t, 20*time.Second, func() bool { r, n := running(t, data); return n == 1 && r == 1 }, "app-blk-1 running")
	target := filepath.Join(data, "nodes", "n1", "pods", "app-blk-1", "volumes", process.CSIPlugin, "blk-1")
	if fi, err := os.Lstat(target); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("target %s: %v, %v; want the plugin's device file", target, fi, err)
	}
	for _, c := range d.Calls() {
		if c.Volume == "blk-1" && slices.Contains([]string{"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"}, c.Method) &&
			(!c.Block || !maps.Equal(c.VolumeContext, d.VolumeContext("blk-1")) || !slices.Equal(c.SecretKeys, []string{"token"})) {
			t.Errorf("%s: want block, the volume_context and the secrets", c)
		}
	}

	o, err := tether("get", "volume", "blk-1", "-o", "json")
	var got struct {
		Volumes []struct {
			Spec struct {
				VolumeMode string `json:"volume_mode"`
				Csi        struct {
					VolumeAttributes map[string]string `json:"volume_attributes"`
					SecretRef        string            `json:"secret_ref"`
				}
			}
		}
	}
	if err != nil || json.Unmarshal([]byte(o), &got) != nil || len(got.Volumes) != 1 || got.Volumes[0].Spec.VolumeMode != "Block" ||
		got.Volumes[0].Spec.Csi.SecretRef != "creds" || !maps.Equal(got.Volumes[0].Spec.Csi.VolumeAttributes, d.VolumeContext("blk-1")) {
		t.Errorf("get volume -o json: %v, %+v", err, got)
	}
	if o, err := tether("describe", "volume", "blk-1"); err != nil || !strings.Contains(o, "Secret ref:         creds") || !strings.Contains(o, "Volume mode:        Block") {
		t.Errorf("describe: %v", err)
	}
	if o, err := tether("apply", "-f", spec("changed.yaml", "blk-1", "  # changed\n")); err != nil {
		t.Errorf("the same fields again: %v, %s", err, o)
	}
	changed := filepath.Join(t.TempDir(), "fs.yaml")
	if err := os.WriteFile(changed, []byte("kind: Volume\nname: blk-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := tether("apply", "-f", changed); err == nil || !strings.Contains(o, "volumeMode, csi.volumeAttributes, csi.secretRef cannot change") {
		t.Errorf("a changed volume: %v, %s", err, o)
	}

	if err := os.Chmod(secretFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if o, err := tether("apply", "-f", spec("two.yaml", "blk-2", "")); err == nil || !strings.Contains(o, secretFile+" has mode 0644") {
		t.Errorf("apply with an open secrets file: %v, %s", err, o)
	}
	if err := os.Chmod(secretFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := tether("delete", "workload", "app-blk-1"); err != nil {
		t.Fatalf("delete: %v, %s", err, o)
	}
	testkit.Eventually(t, 20*time.Second, func() bool { return len(d.PublishedTo("blk-1")) == 0 && len(d.Staged("blk-1", "node-1")) == 0 }, "blk-1 unpublished")
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("the target file is left: %v", err)
	}
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := up.Wait(); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	if strings.Contains(printed.String()+out.String(), secret) {
		t.Error("the secret was printed")
	}
}
