package mount

import (
	"os"
	"testing"
)

func TestDefault(t *testing.T) {
	e := newEnv(t)
	want := "symlink"
	if ok, _ := canBind(t); ok {
		want = "bind"
	}
	if got := Default(e.l).Name(); got != want {
		t.Errorf("Default = %s, want %s", got, want)
	}
	entries, err := os.ReadDir(e.l.Root())
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("the probe left %d entries in the root: %v", len(entries), entries)
	}
}
