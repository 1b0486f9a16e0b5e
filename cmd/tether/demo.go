package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether/tether/bootstrap"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

type demoStep struct {
	Name      string  `json:"name"`
	Converged bool    `json:"converged"`
	Seconds   float64 `json:"seconds"`
	Error     string  `json:"error,omitempty"`
}

type demoReport struct {
	Converged  bool           `json:"converged"`
	Violations int            `json:"violations"`
	Steps      []demoStep     `json:"steps"`
	CloudCalls map[string]int `json:"cloud_calls"`
	Seconds    float64        `json:"seconds"`
}

func demoCommand() *cobra.Command {
	var asJSON bool
	var syncPeriod, timeout time.Duration
	var dataDir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the embedded scenario: attach, lose a node, heal, move, delete",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := bootstrap.DefaultConfig()
			cfg.LogLevel = "warn"
			cfg.LogOutput = cmd.ErrOrStderr()
			cfg.Controller.SyncPeriod = syncPeriod
			if dataDir == "" {
				tmp, err := os.MkdirTemp("", "tether-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dataDir = tmp
			}
			cfg.DataDir = dataDir
			d := &demo{out: cmd.OutOrStdout(), quiet: asJSON, timeout: timeout, plugin: cfg.Agent.Plugin}
			if asJSON {
				d.out = io.Discard
			}
			rep, err := d.run(cfg)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "\nconverged: %v, violations: %d, cloud calls: %v, %.1fs\n", rep.Converged, rep.Violations, rep.CloudCalls, rep.Seconds)
			}
			if !rep.Converged || rep.Violations > 0 {
				return fmt.Errorf("demo did not converge cleanly")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of progress lines")
	cmd.Flags().DurationVar(&syncPeriod, "sync-period", 2*time.Second, "how often the sync actor asks the cloud for the truth")
	cmd.Flags().DurationVar(&timeout, "step-timeout", 30*time.Second, "how long each step may take to converge")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "where volumes' content and mounts live (default: a temporary directory, removed afterwards)")
	return cmd
}

type demo struct {
	out     io.Writer
	quiet   bool
	timeout time.Duration
	plugin  string
	e       *bootstrap.Embedded
	rep     demoReport

	mu         sync.Mutex
	on         map[cloud.VolumeID]map[cloud.InstanceID]bool
	violations []string
	mounters   map[cloud.NodeName]mount.Mounter
}

// mounter is a mounter of the kind the agents use (to inspect and tear down).
func (d *demo) mounter(n cloud.NodeName) mount.Mounter {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.mounters[n]; ok {
		return m
	}
	l, err := layout.New(d.e.NodeDir(n))
	if err != nil {
		panic(err) // node names here are the demo's own, valid ones
	}
	m := mount.Default(l)
	d.mounters[n] = m
	return m
}

var demoModes = map[cloud.VolumeID]cloud.AccessMode{"data-1": cloud.Exclusive, "data-2": cloud.Exclusive, "data-3": cloud.Exclusive, "shared": cloud.MultiNode}

func (d *demo) run(cfg bootstrap.Config) (demoReport, error) {
	t0 := time.Now()
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
	d.on = map[cloud.VolumeID]map[cloud.InstanceID]bool{}
	d.mounters = map[cloud.NodeName]mount.Mounter{}
	e.Cloud.Observe(d.observe)
	d.rep.Converged = d.steps()
	c := e.Cloud.Calls()
	d.rep.CloudCalls = map[string]int{
		"attach": c.Calls[sim.MethodAttach],
		"detach": c.Calls[sim.MethodDetach],
		"verify": c.Calls[sim.MethodInstanceVolumes] + c.Calls[sim.MethodVolumesAreAttached],
	}
	d.mu.Lock()
	d.rep.Violations = len(d.violations)
	for _, v := range d.violations {
		fmt.Fprintln(os.Stderr, "violation:", v)
	}
	d.mu.Unlock()
	d.rep.Seconds = time.Since(t0).Seconds()
	return d.rep, nil
}

// observe checks the cloud's ground truth on every change: an exclusive
// volume on two instances (I1) or an attachment made twice is a violation.
func (d *demo) observe(c sim.Change) {
	if !c.Attached && c.Reason == "detach" {
		d.checkUnmounted(c)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	m := d.on[c.Volume]
	if m == nil {
		m = map[cloud.InstanceID]bool{}
		d.on[c.Volume] = m
	}
	if c.Attached && m[c.Instance] {
		d.violations = append(d.violations, fmt.Sprintf("%s attached twice to %s", c.Volume, c.Instance))
	}
	m[c.Instance] = c.Attached
	n := 0
	for _, on := range m {
		if on {
			n++
		}
	}
	if demoModes[c.Volume] == cloud.Exclusive && n > 1 {
		d.violations = append(d.violations, fmt.Sprintf("I1: exclusive %s on %d instances", c.Volume, n))
	}
}

// checkUnmounted: I2, a volume detached by tether must not be mounted on
// that node any more (the node's disk is the ground truth).
func (d *demo) checkUnmounted(c sim.Change) {
	l, err := layout.New(d.e.NodeDir(c.Node))
	if err != nil {
		return
	}
	found, err := mount.Scan(l, d.mounter(c.Node))
	if err != nil {
		return
	}
	for _, e := range found.Entries {
		if e.Volume == string(c.Volume) && e.State == mount.Mounted {
			d.mu.Lock()
			d.violations = append(d.violations, fmt.Sprintf("I2: %s detached from %s while %s is mounted", c.Volume, c.Node, e.Path))
			d.mu.Unlock()
		}
	}
}
