package names

import (
	"strings"
	"testing"
)

func TestValidFsType(t *testing.T) {
	for _, s := range []string{"ext4", "xfs", "btrfs", "vfat", "f2fs", strings.Repeat("a", MaxFsTypeLen)} {
		if err := ValidFsType(s); err != nil {
			t.Errorf("ValidFsType(%q) = %v, want nil", s, err)
		}
	}
	for _, tc := range []struct{ s, want string }{
		{"", "must not be empty"},
		{"EXT4", "only lowercase letters and digits"},
		{"ext4,rw", "only lowercase"},
		{"../x", "only lowercase"},
		{"ext 4", "only lowercase"},
		{"ext4\x00", "only lowercase"},
		{strings.Repeat("a", MaxFsTypeLen+1), "at most 32"},
	} {
		if err := ValidFsType(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidFsType(%q) = %v, want an error containing %q", tc.s, err, tc.want)
		}
	}
}

func TestValidMountOptions(t *testing.T) {
	if err := ValidMountOptions([]string{"noatime", "nodev", "discard", "context=system_u:object_r:x:s0", "uid=1000"}); err != nil {
		t.Errorf("good options: %v", err)
	}
	if err := ValidMountOptions(nil); err != nil {
		t.Errorf("no options: %v", err)
	}
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{[]string{""}, "[0] \"\": must not be empty"},
		{[]string{"ro", "noatime,nodev"}, "[1] \"noatime,nodev\": a comma would split it"},
		{[]string{"a\x00b"}, "[0] \"a\\x00b\": only printable ASCII"},
		{[]string{"a\nb"}, "only printable ASCII"},
		{[]string{"a b"}, "only printable ASCII"},
		{[]string{`a"b`}, "only printable ASCII"},
		{[]string{"nöatime"}, "only printable ASCII"},
		{[]string{strings.Repeat("o", MaxMountOptionLen+1)}, "at most 128"},
		{make([]string, MaxMountOptions+1), "at most 64 are allowed"},
	} {
		if err := ValidMountOptions(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidMountOptions(%q) = %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
}

func TestValidVolumeAttributes(t *testing.T) {
	good := map[string]string{"csi.tether.test/share": "share-data-1", "storage.kubernetes.io/csiProvisionerIdentity": "1-2-3", "empty": "", "ünïcode": "välue"}
	if err := ValidVolumeAttributes(good); err != nil {
		t.Errorf("good attributes: %v", err)
	}
	for _, tc := range []struct {
		attrs map[string]string
		want  string
	}{
		{map[string]string{"": "x"}, "an empty key"},
		{map[string]string{"a\x00": "x"}, "NUL and invalid UTF-8"},
		{map[string]string{"k": "\xff"}, `the value of key "k"`},
		{map[string]string{strings.Repeat("k", MaxAttributeKeyLen+1): "x"}, "at most 128"},
		{map[string]string{"k": strings.Repeat("v", MaxAttributesBytes)}, "at most 4096"},
	} {
		if err := ValidVolumeAttributes(tc.attrs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidVolumeAttributes(%q) = %v, want an error containing %q", tc.attrs, err, tc.want)
		}
	}
}

// A secret's name becomes a file name under the data directory: nothing
// that could leave the directory passes.
func TestSecretNames(t *testing.T) {
	for _, s := range []string{"", ".", "..", "../x", "a/b", "/etc/passwd", `a\b`, "a\x00", ".hidden", "-x", "x y"} {
		if err := ValidName(KindSecret, s); err == nil || !strings.Contains(err.Error(), "invalid secret name") {
			t.Errorf("ValidName(KindSecret, %q) = %v, want refused", s, err)
		}
	}
	if err := ValidName(KindSecret, "db-creds.v2"); err != nil {
		t.Error(err)
	}
}
