package demo

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/verify/chaos"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/agent"
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
	// Cloud is process.CloudSim ("" too), process.CloudLoop (root
	// only: real loop devices, released at the end with everything the
	// demo mounted) or process.CloudCSI (csitest's fake CSI driver,
	// served in this process on sockets in a private temporary
	// directory, removed at the end: no privileges needed).
	Cloud string
	// LoopVolumeSize is the size of each disk on the loop cloud (0:
	// process.DefaultLoopVolumeSize).
	LoopVolumeSize int64
}

// Run runs the demo.
func Run(c Config) (Report, error) {
	cfg := process.DefaultConfig()
	cfg.LogLevel = "warn"
	cfg.LogOutput = c.Log
	if cfg.LogOutput == nil {
		cfg.LogOutput = io.Discard
	}
	cfg.Controller.SyncPeriod = c.SyncPeriod
	// A cloud that refuses a second exclusive attach would hide I1. (The
	// loop cloud does refuse one: on it, I1 is the cloud's to keep too.)
	cfg.Sim.Permissive = true
	cfg.Cloud, cfg.Loop.VolumeSize = c.Cloud, c.LoopVolumeSize
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
	d := &demo{out: out, timeout: c.StepTimeout, chk: &chaos.Checker{}, dataDir: dataDir}
	d.modes, d.uses = scenario(c.Cloud)
	d.rep.Cloud = cmp.Or(c.Cloud, process.CloudSim)
	if c.Cloud == process.CloudCSI {
		f, err := startFakeDriver(slices.Sorted(maps.Keys(d.modes)))
		if err != nil {
			return Report{}, err
		}
		// Deferred after tether's stop (run's): tether lets go of the
		// sockets first.
		defer func() {
			if err := f.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "tether: stopping the fake CSI driver:", err)
			}
		}()
		f.config(&cfg)
		d.fake = f
	}
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
	// Cloud is what the demo ran on: sim, loop or csi.
	Cloud      string `json:"cloud"`
	Converged  bool   `json:"converged"`
	Violations int    `json:"violations"`
	// Found lists the violations of I1-I4 the checker judged on the
	// timeline of the run (each with its volume's history).
	Found      []chaos.Violation `json:"violation_details"`
	Steps      []Step            `json:"steps"`
	CloudCalls map[string]int    `json:"cloud_calls"`
	// CSI is what the fake CSI driver saw (cloud csi only).
	CSI     *CSIReport `json:"csi,omitempty"`
	Seconds float64    `json:"seconds"`
}

type demo struct {
	out     io.Writer
	timeout time.Duration
	dataDir string
	plugin  string
	fake    *fakeDriver // cloud csi only
	e       *process.Embedded
	chk     *chaos.Checker
	rep     Report
	modes   map[cloud.VolumeID]cloud.AccessMode // the volumes
	uses    map[string][]cloud.VolumeID         // workload -> its volumes
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

// scenario returns the demo's volumes and what each workload uses: on the
// loop cloud, without the multi-node volume "shared" (its disks carry
// ext4, which one machine at a time may mount: tether refuses multi-node
// volumes there).
func scenario(kind string) (map[cloud.VolumeID]cloud.AccessMode, map[string][]cloud.VolumeID) {
	modes, uses := maps.Clone(demoModes), map[string][]cloud.VolumeID{}
	for uid, vols := range demoUses {
		uses[uid] = slices.Clone(vols)
	}
	if kind != process.CloudLoop {
		return modes, uses
	}
	for v, m := range modes {
		if m != cloud.Exclusive {
			delete(modes, v)
			for uid := range uses {
				uses[uid] = slices.DeleteFunc(uses[uid], func(u cloud.VolumeID) bool { return u == v })
			}
		}
	}
	return modes, uses
}

// run starts tether with the checker recording the cloud's changes, the
// agents' mounts and the node status writes, runs the steps and judges.
// On the fake CSI driver the checker is not wired: the driver's log of
// calls is the timeline (judgeCalls).
func (d *demo) run(cfg process.Config) (Report, error) {
	t0 := time.Now()
	if d.fake == nil {
		d.chk.Wire(&cfg)
	}
	e, err := process.StartEmbedded(cfg)
	if err != nil {
		return d.rep, err
	}
	d.e, d.plugin = e, e.Plugin()
	defer d.stop(cfg.DataDir)
	if d.fake == nil {
		d.chk.Watch(e)
	}
	d.rep.Converged = d.steps()
	d.rep.CloudCalls = e.Account.CallCounts().Map()
	if d.fake != nil {
		d.rep.CSI = d.csiReport()
		d.rep.Found = judgeCalls(d.fake.d.Calls(), d.modes, d.fake.nodeIDs(e.NodeNames))
	} else {
		d.rep.Found = d.chk.Violations()
	}
	d.rep.Violations = len(d.rep.Found)
	for _, v := range d.rep.Found {
		fmt.Fprintln(os.Stderr, "violation:", v, "\n  history:", strings.Join(v.History, "\n    "))
	}
	d.rep.Seconds = time.Since(t0).Seconds()
	return d.rep, nil
}

// stop stops tether, then takes down whatever a failed step left mounted
// and releases every loop device, so that the data directory can be
// removed. A CSI driver's mounts are its own: the fake's go with it.
func (d *demo) stop(dataDir string) {
	if err := d.e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "tether: stop:", err)
	}
	if d.fake != nil {
		return
	}
	for _, n := range d.e.NodeNames {
		if err := agent.Teardown(d.e.NodeDir(n), d.mounter(n)); err != nil {
			fmt.Fprintln(os.Stderr, "tether: teardown:", err)
		}
	}
	if err := process.ReleaseLoop(dataDir); err != nil {
		fmt.Fprintln(os.Stderr, "tether: releasing the loop devices:", err)
	}
}
