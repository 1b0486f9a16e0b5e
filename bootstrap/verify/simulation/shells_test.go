package simulation

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/node/agent"
)

// The simulation hosts the production shells' runners: each host
// implements the interface its Proto.Actor shell implements too.
var (
	_ controller.VolumeHost = (*volHost)(nil)
	_ controller.NodeHost   = (*nodeHost)(nil)
	_ controller.SyncHost   = (*syncHost)(nil)
	_ agent.Host            = (*agentHost)(nil)
	_ agent.Mounts          = diskMounts{}
)

// The code the production actors run is linked in: the packages of the
// controller's and the node agent's shells.
func TestRunsTheProductionShells(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"github.com/tether/tether/actors/controller", "github.com/tether/tether/node/agent"} {
		if !slices.Contains(deps, want) {
			t.Errorf("the simulation does not depend on %s", want)
		}
	}
}
