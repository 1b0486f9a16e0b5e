package process

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// secretValue is a secret no error, event, log line or output may show.
const secretValue = "hunter2-do-not-print"

// writeSecrets writes the secrets file of ref under dir with mode perm,
// creating the secrets directory (0700).
func writeSecrets(t *testing.T, dir, ref, content string, perm os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, CSISecretsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, CSISecretsDir, ref+".json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	return path
}

// A secrets file is read only if it is a regular file of its owner alone
// (0600 or stricter) holding a flat JSON object of strings; every
// refusal names the file and what is wrong, never what it holds. A name
// that could leave the data directory is refused before any path is
// made of it.
func TestReadCSISecrets(t *testing.T) {
	dir := t.TempDir()
	good := `{"user":"admin","password":"` + secretValue + `"}`
	writeSecrets(t, dir, "ok", good, 0o600)
	writeSecrets(t, dir, "ro", good, 0o400)
	for _, ref := range []string{"ok", "ro"} {
		s, err := ReadCSISecrets(dir, ref)
		if err != nil || !maps.Equal(s, map[string]string{"user": "admin", "password": secretValue}) {
			t.Fatalf("%s: %v, %v", ref, len(s), err)
		}
	}
	open := writeSecrets(t, dir, "open", good, 0o644)
	group := writeSecrets(t, dir, "group", good, 0o640)
	writeSecrets(t, dir, "notjson", `{"password":"`+secretValue, 0o600)
	writeSecrets(t, dir, "nested", `{"password":{"v":"`+secretValue+`"}}`, 0o600)
	writeSecrets(t, dir, "array", `["`+secretValue+`"]`, 0o600)
	writeSecrets(t, dir, "null", `null`, 0o600)
	writeSecrets(t, dir, "big", `{"k":"`+strings.Repeat("x", maxSecretsBytes)+`"}`, 0o600)
	outside := filepath.Join(t.TempDir(), "elsewhere.json")
	if err := os.WriteFile(outside, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, CSISecretsDir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, CSISecretsDir, "adir.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ ref, want string }{
		{"open", "csi: secrets file " + open + " has mode 0644: it must be readable by its owner alone (mode 0600 or stricter"},
		{"group", group + " has mode 0640"},
		{"notjson", "does not hold a flat JSON object of strings (invalid JSON at offset"},
		{"nested", "does not hold a flat JSON object of strings"},
		{"array", "does not hold a flat JSON object"},
		{"null", "does not hold a flat JSON object"},
		{"big", "is larger than 65536 bytes"},
		{"link", "link.json is a L---------, not a regular file"},
		{"adir", "adir.json is a d---------, not a regular file"},
		{"missing", "no such file or directory"},
		{"../x", `csi: names: invalid secret name "../x"`},
		{"..", "invalid secret name"},
		{"a/b", "invalid secret name"},
		{"/etc/shadow", "invalid secret name"},
		{"x\x00", "invalid secret name"},
		{"", "invalid secret name"},
	} {
		s, err := ReadCSISecrets(dir, tt.ref)
		if err == nil || s != nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, %v; want refused with %q", tt.ref, len(s), err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), secretValue) {
			t.Errorf("%q: the error shows the secret: %v", tt.ref, err)
		}
	}
}

// A secrets directory that is a symlink (it could lead anywhere) is
// refused.
func TestReadCSISecretsDirSymlink(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	writeSecrets(t, elsewhere, "s", `{"k":"v"}`, 0o600)
	if err := os.Symlink(filepath.Join(elsewhere, CSISecretsDir), filepath.Join(dir, CSISecretsDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCSISecrets(dir, "s"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a symlinked secrets directory: %v", err)
	}
}

// csiAccessOf carries every driver field, the secrets read now; a bad
// secrets file fails it, naming the volume, the secretRef and the file.
func TestCSIAccessOf(t *testing.T) {
	dir := t.TempDir()
	writeSecrets(t, dir, "creds", `{"password":"`+secretValue+`"}`, 0o600)
	v := store.VolumeSpec{ID: "v", Mode: cloud.MultiNode, ReadOnly: true, FsType: "xfs", MountOptions: []string{"noatime"},
		VolumeAttributes: map[string]string{"k": "v"}, SecretRef: "creds"}
	a, err := csiAccessOf(dir, v)
	if err != nil || !a.ReadOnlyMany() || a.FsType != "xfs" || a.MountFlags[0] != "noatime" || a.VolumeContext["k"] != "v" || a.Secrets["password"] != secretValue {
		t.Fatalf("csiAccessOf = %#v, %v", a, err)
	}
	path := writeSecrets(t, dir, "creds", `{"password":"`+secretValue+`"}`, 0o604)
	if _, err := csiAccessOf(dir, v); err == nil || !strings.Contains(err.Error(), `volume v: csi.secretRef "creds": csi: secrets file `+path+" has mode 0604") {
		t.Errorf("csiAccessOf with an open file: %v", err)
	}
	if a, err := csiAccessOf(dir, store.VolumeSpec{ID: "w", Block: true}); err != nil || !a.Block || a.Secrets != nil {
		t.Errorf("no secretRef: %#v, %v", a, err)
	}
}
