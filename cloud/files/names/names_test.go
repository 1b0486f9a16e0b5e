package names

import (
	"errors"
	"strings"
	"testing"
)

func TestValidNameGood(t *testing.T) {
	for _, name := range []string{
		"a", "Z", "0", "vol-1", "vol_1", "vol.1", "a..b", "a-", "1.2.3",
		"pvc-0a1b2c3d-4e5f-6789-abcd-ef0123456789", strings.Repeat("x", MaxNameLen),
	} {
		if err := ValidName(KindVolume, name); err != nil {
			t.Errorf("ValidName(%q) = %v, want nil", name, err)
		}
	}
}

func TestValidNameBad(t *testing.T) {
	long := strings.Repeat("y", MaxNameLen+1)
	tests := []struct {
		name, value, want string
	}{
		{"empty", "", `names: invalid volume ID "": must not be empty`},
		{"dot", ".", `names: invalid volume ID ".": must start with a letter or digit`},
		{"dotdot", "..", `names: invalid volume ID "..": must start with a letter or digit`},
		{"parent", "../x", `names: invalid volume ID "../x": only letters, digits, '.', '_' and '-' are allowed`},
		{"slash", "a/b", `only letters, digits`},
		{"absolute", "/abs", `names: invalid volume ID "/abs": only letters`},
		{"backslash", `a\b`, `"a\\b": only letters`},
		{"NUL", "a\x00b", `"a\x00b": only letters`},
		{"leading space", " a", `" a": only letters`},
		{"trailing space", "a ", `only letters`},
		{"dash first", "-a", `"-a": must start with a letter or digit`},
		{"underscore first", "_a", `must start with a letter or digit`},
		{"too long", long, `"` + long[:64] + `"...: is 129 bytes long, at most 128 are allowed`},
		{"unicode", "vólume", `"vólume": only letters`},
		{"newline", "a\nb", `"a\nb": only letters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidName(KindVolume, tt.value)
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("ValidName(%q) = %v, want ErrInvalidName", tt.value, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			var ne *NameError
			if !errors.As(err, &ne) || ne.Kind != KindVolume || ne.Name != tt.value {
				t.Errorf("error %#v is not a NameError for this value", err)
			}
		})
	}
}

func TestValidNameKinds(t *testing.T) {
	for _, kind := range []string{KindVolume, KindWorkload, KindNode, KindPlugin} {
		err := ValidName(kind, "..")
		if err == nil || !strings.HasPrefix(err.Error(), "names: invalid "+kind+` ".."`) {
			t.Errorf("kind %s: error %v does not name the kind", kind, err)
		}
	}
}
