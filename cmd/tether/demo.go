package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether/tether/bootstrap/demo"
)

func demoCommand() *cobra.Command {
	var asJSON bool
	var cfg demo.Config
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the embedded scenario: attach, lose a node, heal, move, delete",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateDemo(cmd.Flags()); err != nil {
				return err
			}
			if err := (&validator{fs: cmd.Flags()}).checkCloud(); err != nil {
				return err
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
	return cmd
}
