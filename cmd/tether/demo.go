package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/verify/demo"
)

func demoCommand() *cobra.Command {
	var asJSON, csi bool
	var cfg demo.Config
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the embedded scenario: attach, lose a node, heal, move, delete",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateDemo(cmd.Flags()); err != nil {
				return err
			}
			if err := checkDemoCSI(cmd.Flags()); err != nil {
				return err
			}
			if err := (&validator{fs: cmd.Flags()}).checkCloud(); err != nil {
				return err
			}
			if csi {
				cfg.Cloud = process.CloudCSI
			}
			cfg.Log = cmd.ErrOrStderr()
			if !asJSON {
				cfg.Out = cmd.OutOrStdout()
			}
			rep, err := demo.Run(cfg)
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
				if rep.CSI != nil {
					rep.CSI.WriteText(cmd.OutOrStdout())
				}
			}
			if !rep.Converged || rep.Violations > 0 {
				return fmt.Errorf("demo did not converge cleanly")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of progress lines")
	cmd.Flags().DurationVar(&cfg.SyncPeriod, "sync-period", 2*time.Second, "how often the sync actor asks the cloud for the truth (at least 1s: each sync is one cloud call per node)")
	cmd.Flags().DurationVar(&cfg.StepTimeout, "step-timeout", 30*time.Second, "how long each step may take to converge (at least 1s)")
	cmd.Flags().StringVar(&cfg.DataDir, "data-dir", "", "where volumes' content and mounts live (default: a temporary directory, removed afterwards)")
	cloudFlags(cmd.Flags(), &cfg.Cloud, &cfg.LoopVolumeSize)
	cmd.Flags().BoolVar(&csi, "csi", false, "run on CSI: csitest's fake CSI driver, served in this process on unix sockets in a private temporary directory (no privileges needed), checked against the driver's own state and calls")
	return cmd
}

// checkDemoCSI refuses --csi with --cloud or --loop-volume-size: the fake
// CSI driver is the cloud then.
func checkDemoCSI(fs *pflag.FlagSet) error {
	v := validator{fs: fs}
	if csi, _ := fs.GetBool("csi"); !csi {
		return nil
	}
	for _, name := range []string{"cloud", "loop-volume-size"} {
		if v.given(name) {
			v.refuse(name, "not with --csi: the fake CSI driver is the cloud then (tether demo --csi, or tether demo --cloud loop, not both)")
		}
	}
	return v.err
}
