package layout

import (
	"errors"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	for _, bad := range []string{"", "/", "/.", "/a/.."} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) succeeded, want an error", bad)
		}
	}
	l, err := New("/data//tether/")
	if err != nil || l.Root() != "/data/tether" {
		t.Fatalf("New = %q, %v; want /data/tether", l.Root(), err)
	}
	rel, err := New("rel/dir")
	if err != nil || !strings.HasSuffix(rel.Root(), "/rel/dir") || !strings.HasPrefix(rel.Root(), "/") {
		t.Errorf("New(rel/dir) = %q, %v; want an absolute path", rel.Root(), err)
	}
}

func TestPaths(t *testing.T) {
	l, err := New("/data")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		got     func() (string, error)
		want    string
		wantErr string
	}{
		{"pod dir", func() (string, error) { return l.PodDir("uid-1") }, "/data/pods/uid-1", ""},
		{"pod volume", func() (string, error) { return l.PodVolume("uid-1", "ebs", "vol-1") }, "/data/pods/uid-1/volumes/ebs/vol-1", ""},
		{"global mount", func() (string, error) { return l.GlobalMount("ebs", "vol-1") }, "/data/plugins/ebs/mounts/vol-1", ""},
		{"pod dir dotdot", func() (string, error) { return l.PodDir("..") }, "", "workload UID"},
		{"pod volume bad uid", func() (string, error) { return l.PodVolume("../../etc", "ebs", "v") }, "", "workload UID"},
		{"pod volume bad plugin", func() (string, error) { return l.PodVolume("u", "a/b", "v") }, "", "plugin name"},
		{"pod volume bad volume", func() (string, error) { return l.PodVolume("u", "ebs", "/abs") }, "", "volume ID"},
		{"global mount bad plugin", func() (string, error) { return l.GlobalMount("", "v") }, "", "plugin name"},
		{"global mount bad volume", func() (string, error) { return l.GlobalMount("ebs", "..") }, "", "volume ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tt.wantErr) || got != "" {
					t.Fatalf("got %q, %v; want an error naming %s", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestZeroLayout(t *testing.T) {
	var l Layout
	if p, err := l.PodDir("u"); err == nil {
		t.Errorf("zero Layout PodDir = %q, want an error", p)
	}
	if p, err := l.GlobalMount("p", "v"); err == nil {
		t.Errorf("zero Layout GlobalMount = %q, want an error", p)
	}
	if l.Contains("/") || l.Contains("pods") {
		t.Error("zero Layout contains a path")
	}
}

func TestContains(t *testing.T) {
	l, err := New("/data/t")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"/data/t":               true,
		"/data/t/":              true,
		"/data/t/pods/x":        true,
		"/data/t/./pods":        true,
		"/data/t/pods/../x":     true,
		"/data/t/..":            false,
		"/data/t/../t2":         false,
		"/data/tx":              false,
		"/data/t2/pods":         false,
		"/data":                 false,
		"/":                     false,
		"":                      false,
		"pods/x":                false,
		"data/t/pods":           false,
		"/data/t/pods/../../t2": false,
	} {
		if got := l.Contains(path); got != want {
			t.Errorf("Contains(%q) = %v, want %v", path, got, want)
		}
	}
}
