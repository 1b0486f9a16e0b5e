package distributed

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/messages"
)

// Command is one line of chaos control (--chaos-control): tether chaos
// --distributed writes them, as JSON, to the stdin of the members and
// agents it runs, to kill actors as the embedded chaos does and to turn
// faults on and off.
type Command struct {
	// Kill names an actor as embedded mode does: "volume/<id>",
	// "node/<name>" or "sync" (members), "agent/<node>" (agents).
	Kill string `json:"kill,omitempty"`
	// How: "stop", "poison" or "panic" (a messages.Crash).
	How string `json:"how,omitempty"`
	// Faults, if set, replace the member's faults.
	Faults *Faults `json:"faults,omitempty"`
}

// Ways to kill an actor (Command.How).
const (
	KillStop   = "stop"
	KillPoison = "poison"
	KillPanic  = "panic"
)

// serveControl reads commands from r until it ends, handing each to do.
// A line that does not decode is logged and skipped.
func serveControl(r io.Reader, log logrus.FieldLogger, do func(Command)) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var c Command
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			log.Warnf("chaos control: %v", err)
			continue
		}
		do(c)
	}
}

// kill stops or crashes pid through the spawn guard, as the embedded
// chaos does.
func kill(g *spawn.Guard, pid *actor.PID, how string) {
	switch how {
	case KillStop:
		g.Stop(pid)
	case KillPoison:
		g.Poison(pid)
	default:
		g.Send(pid, &messages.Crash{Reason: "chaos"})
	}
}

// control is a member's chaos control: kills resolve the identity
// through the cluster, wherever the actor lives, on their own goroutine
// (a resolution may wait for the cluster).
func (m *Member) control(c Command) {
	if c.Faults != nil {
		m.faulty.set(*c.Faults)
		m.store.setFailRate(c.Faults.StoreFailRate, c.Faults.Seed)
	}
	if c.Kill == "" {
		return
	}
	kind, id := controller.KindSync, "sync"
	switch {
	case strings.HasPrefix(c.Kill, "volume/"):
		kind, id = controller.KindVolume, strings.TrimPrefix(c.Kill, "volume/")
	case strings.HasPrefix(c.Kill, "node/"):
		kind, id = controller.KindNode, strings.TrimPrefix(c.Kill, "node/")
	}
	cl, g := m.Cluster, m.Controller.Guard()
	go func() {
		if pid := cl.Get(id, kind); pid != nil {
			kill(g, pid, c.How)
		}
	}()
}
