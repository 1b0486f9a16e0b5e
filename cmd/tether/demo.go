package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether/tether/bootstrap"
	"github.com/tether/tether/bootstrap/chaos"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node"
	"github.com/tether/tether/node/mount"
)

type demoStep struct {
	Name      string  `json:"name"`
	Converged bool    `json:"converged"`
	Seconds   float64 `json:"seconds"`
	Error     string  `json:"error,omitempty"`
}

type demoReport struct {
	Converged  bool `json:"converged"`
	Violations int  `json:"violations"`
	// Found lists the violations of I1-I4 the checker judged on the
	// timeline of the run (each with its volume's history).
	Found      []chaos.Violation `json:"violation_details"`
	Steps      []demoStep        `json:"steps"`
	CloudCalls map[string]int    `json:"cloud_calls"`
	Seconds    float64           `json:"seconds"`
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
			if err := validateDemo(cmd.Flags()); err != nil {
				return err
			}
			cfg := bootstrap.DefaultConfig()
			cfg.LogLevel = "warn"
			cfg.LogOutput = cmd.ErrOrStderr()
			cfg.Controller.SyncPeriod = syncPeriod
			// A cloud that refuses a second exclusive attach would hide I1.
			cfg.Sim.Permissive = true
			if dataDir == "" {
				tmp, err := os.MkdirTemp("", "tether-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dataDir = tmp
			}
			cfg.DataDir = dataDir
			d := &demo{out: cmd.OutOrStdout(), timeout: timeout, plugin: cfg.Agent.Plugin, chk: &chaos.Checker{}}
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
				for _, v := range rep.Found {
					fmt.Fprintln(cmd.OutOrStdout(), "  "+v.String())
				}
			}
			if !rep.Converged || rep.Violations > 0 {
				return fmt.Errorf("demo did not converge cleanly")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of progress lines")
	cmd.Flags().DurationVar(&syncPeriod, "sync-period", 2*time.Second, "how often the sync actor asks the cloud for the truth (at least 1s: each sync is one cloud call per node)")
	cmd.Flags().DurationVar(&timeout, "step-timeout", 30*time.Second, "how long each step may take to converge (at least 1s)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "where volumes' content and mounts live (default: a temporary directory, removed afterwards)")
	return cmd
}

type demo struct {
	out     io.Writer
	timeout time.Duration
	plugin  string
	e       *bootstrap.Embedded
	chk     *chaos.Checker
	rep     demoReport
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
func (d *demo) run(cfg bootstrap.Config) (demoReport, error) {
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
