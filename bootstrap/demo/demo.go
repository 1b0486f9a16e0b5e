// Package demo is tether demo: the embedded system through a scripted
// scenario (attach, lose a node, heal, move, delete), with the chaos
// checker judging invariants I1-I4 on the timeline of the ground truth.
package demo

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tether/tether/bootstrap"
	"github.com/tether/tether/bootstrap/chaos"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node"
	"github.com/tether/tether/node/mount"
)

// Config of a demo run.
type Config struct {
	// SyncPeriod is how often the sync actor asks the cloud for the truth.
	SyncPeriod time.Duration
	// StepTimeout bounds each step's convergence.
	StepTimeout time.Duration
	// DataDir holds volumes' content and mounts; empty: a temporary
	// directory, removed afterwards.
	DataDir string
	// Out receives progress lines (nil: none); Log, tether's warnings.
	Out, Log io.Writer
}

// Run runs the demo.
func Run(c Config) (Report, error) {
	cfg := bootstrap.DefaultConfig()
	cfg.LogLevel = "warn"
	cfg.LogOutput = c.Log
	if cfg.LogOutput == nil {
		cfg.LogOutput = io.Discard
	}
	cfg.Controller.SyncPeriod = c.SyncPeriod
	// A cloud that refuses a second exclusive attach would hide I1.
	cfg.Sim.Permissive = true
	dataDir := c.DataDir
	if dataDir == "" {
		tmp, err := os.MkdirTemp("", "tether-demo-")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(tmp)
		dataDir = tmp
	}
	cfg.DataDir = dataDir
	out := c.Out
	if out == nil {
		out = io.Discard
	}
	d := &demo{out: out, timeout: c.StepTimeout, plugin: cfg.Agent.Plugin, chk: &chaos.Checker{}}
	return d.run(cfg)
}

// Step is one step of the demo and how it ended.
type Step struct {
	Name      string  `json:"name"`
	Converged bool    `json:"converged"`
	Seconds   float64 `json:"seconds"`
	Error     string  `json:"error,omitempty"`
}

// Report is what the demo found.
type Report struct {
	Converged  bool `json:"converged"`
	Violations int  `json:"violations"`
	// Found lists the violations of I1-I4 the checker judged on the
	// timeline of the run (each with its volume's history).
	Found      []chaos.Violation `json:"violation_details"`
	Steps      []Step            `json:"steps"`
	CloudCalls map[string]int    `json:"cloud_calls"`
	Seconds    float64           `json:"seconds"`
}

type demo struct {
	out     io.Writer
	timeout time.Duration
	plugin  string
	e       *bootstrap.Embedded
	chk     *chaos.Checker
	rep     Report
}

// mounter is a mounter of the kind the agents use (to inspect and tear down).
func (d *demo) mounter(n cloud.NodeName) mount.Mounter {
	m, err := d.e.Mounter(n)
	if err != nil {
		panic(err) // node names here are the demo's own, valid ones
	}
	return m
}

var demoModes = map[cloud.VolumeID]cloud.AccessMode{"data-1": cloud.Exclusive, "data-2": cloud.Exclusive, "data-3": cloud.Exclusive, "shared": cloud.MultiNode}

// run starts tether with the checker recording the cloud's changes, the
// agents' mounts and the node status writes, runs the steps and judges.
func (d *demo) run(cfg bootstrap.Config) (Report, error) {
	t0 := time.Now()
	d.chk.Wire(&cfg)
	e, err := bootstrap.StartEmbedded(cfg)
	if err != nil {
		return d.rep, err
	}
	d.e = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "tether: stop:", err)
		}
		// Whatever a failed step left mounted goes, so the data directory
		// can be removed.
		for _, n := range e.NodeNames {
			if err := node.Teardown(e.NodeDir(n), d.mounter(n)); err != nil {
				fmt.Fprintln(os.Stderr, "tether: teardown:", err)
			}
		}
	}()
	d.chk.Watch(e)
	d.rep.Converged = d.steps()
	c := e.Cloud.Calls()
	d.rep.CloudCalls = map[string]int{
		"attach": c.Calls[sim.MethodAttach],
		"detach": c.Calls[sim.MethodDetach],
		"verify": c.Calls[sim.MethodInstanceVolumes] + c.Calls[sim.MethodVolumesAreAttached],
	}
	d.rep.Found = d.chk.Violations()
	d.rep.Violations = len(d.rep.Found)
	for _, v := range d.rep.Found {
		fmt.Fprintln(os.Stderr, "violation:", v, "\n  history:", strings.Join(v.History, "\n    "))
	}
	d.rep.Seconds = time.Since(t0).Seconds()
	return d.rep, nil
}
