package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

const self = "github.com/tether/tether/cloud/testkit"

// testkit is for tests: no package of the module imports it outside its
// _test.go files (it would link package testing into a binary), and it
// imports nothing of the module (every test package may import it).
func TestImportedByTestsOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", "github.com/tether/tether/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, bad := range misuses(string(out)) {
		t.Error(bad)
	}
}

// misuses reads go list lines "pkg:import import ..." and names the
// packages that import testkit, and testkit's imports of the module.
func misuses(listing string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		for _, im := range strings.Fields(imports) {
			switch {
			case pkg == self && strings.HasPrefix(im, "github.com/tether/tether/"):
				out = append(out, "testkit imports "+im+": it must stay a leaf")
			case pkg != self && im == self:
				out = append(out, pkg+" imports testkit outside its tests")
			}
		}
	}
	return out
}

// The check catches both misuses.
func TestImportedByTestsOnlyCatches(t *testing.T) {
	listing := "github.com/tether/tether/actors/volume:fmt " + self + "\n" +
		self + ":fmt github.com/tether/tether/cloud\n" +
		"github.com/tether/tether/cloud/sim:fmt github.com/tether/tether/cloud\n"
	got := misuses(listing)
	want := []string{"github.com/tether/tether/actors/volume imports testkit outside its tests", "testkit imports github.com/tether/tether/cloud: it must stay a leaf"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("misuses = %q, want %q", got, want)
	}
}
