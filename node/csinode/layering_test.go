package csinode

import (
	"os/exec"
	"strings"
	"testing"
)

// Rooms import downward: node/csinode imports no actors/ (nor bootstrap/).
func TestImportsDownward(t *testing.T) {
	for _, tc := range []struct {
		pkgs      []string
		forbidden []string
	}{
		{[]string{"./"}, []string{"/actors", "/bootstrap"}},
	} {
		out, err := exec.Command("go", append([]string{"list", "-deps"}, tc.pkgs...)...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", tc.pkgs, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			rest, ours := strings.CutPrefix(dep, "github.com/tether/tether")
			for _, f := range tc.forbidden {
				if ours && (rest == f || strings.HasPrefix(rest, f+"/")) {
					t.Errorf("%v depends on %s", tc.pkgs, dep)
				}
			}
		}
	}
}
