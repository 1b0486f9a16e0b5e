package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/verify/chaos"
)

func chaosCommand() *cobra.Command {
	var cfg chaos.Config
	var asJSON, dist, csi bool
	var controllers int
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Run tether under seeded faults and check its invariants on ground truth",
		Long: `Run tether under seeded faults and check its invariants on ground truth.

Embedded (the default): one process, actors killed, the cloud and the store
failing. --distributed: a whole distributed tether on this machine, each part
in its own process (etcd, the cloud, --controllers members, one agent per
node), with the same kinds of faults where they apply across processes, and
processes SIGKILLed, restarted and partitioned besides.

--cloud loop (embedded, root only): the same on real loop devices, formatted
ext4 and mounted, with smaller defaults (6 volumes, all ReadWriteOnce, 3
nodes, 30s); every mount and loop device is released at the end.

--csi (embedded): the same on a fake CSI driver served in this process
(one node plugin per node), whose calls fail, hang, lose their replies
and whose plugins restart; the checkers judge the driver's own timeline.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateChaos(cmd.Flags()); err != nil {
				return err
			}
			if err := validateDistributedChaos(cmd.Flags(), dist); err != nil {
				return err
			}
			if err := validateCSIChaos(cmd.Flags(), dist, csi); err != nil {
				return err
			}
			if err := validateLoopChaos(cmd.Flags(), &cfg, dist); err != nil {
				return err
			}
			if csi {
				cfg.Cloud = process.CloudCSI // after the checks of --cloud, whose variable it is
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cfg.Log = cmd.ErrOrStderr()
			if cfg.UI {
				if dist {
					return usageError{errors.New("--ui: the page follows embedded runs only (not --distributed)")}
				}
				out := cmd.OutOrStdout()
				if asJSON { // stdout is the report's alone
					out = cmd.ErrOrStderr()
				}
				cfg.OnUI = func(url, tokenFile string) {
					fmt.Fprintf(out, "  UI       %s  (token in %s; served while the run lasts)\n", url, tokenFile)
				}
			}
			var rep chaos.Report
			var err error
			deadline := chaos.Deadline()
			if dist {
				deadline = chaos.DistributedDeadline()
				rep, err = chaos.RunDistributed(ctx, chaos.DistributedConfig{Config: cfg, Controllers: controllers})
			} else {
				rep, err = chaos.Run(ctx, cfg)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, err := json.Marshal(rep)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
			} else {
				printChaos(cmd, rep, deadline)
			}
			if rep.Violations > 0 || !rep.Converged {
				return fmt.Errorf("chaos seed %d: %d violations, converged=%v", rep.Seed, rep.Violations, rep.Converged)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&cfg.Seed, "seed", uint64(time.Now().UnixNano()%1e6), "seed of the fault plan (the same seed gives the same plan)")
	f.DurationVar(&cfg.Duration, "duration", 20*time.Second, "how long faults are injected (at least 1s; with --cloud loop default 30s)")
	f.IntVar(&cfg.Volumes, "volumes", 24, "how many volumes, at least 1 (every fourth is multi-node; with --cloud loop all are ReadWriteOnce, 1 to 32, default 6)")
	f.IntVar(&cfg.Nodes, "nodes", 4, "how many nodes (2 to 1000; with --cloud loop 2 to 8, default 3)")
	f.StringVar(&cfg.DataDir, "data-dir", "", "data directory (default: a temporary one, removed afterwards)")
	f.Float64Var(&cfg.CloudLimit.QPS, "cloud-qps", 0, "put tether's client-side cloud limit in the way: calls per second (0: none)")
	f.IntVar(&cfg.CloudLimit.Burst, "cloud-burst", 10, "with --cloud-qps: calls at once after a quiet spell")
	f.IntVar(&cfg.CloudLimit.MaxInFlight, "cloud-max-inflight", 0, "calls to the cloud waiting for an answer at once (0: no bound)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object (counts, and each violation with its history)")
	f.BoolVar(&dist, "distributed", false, "run distributed tether, each part in its own process of this binary")
	f.IntVar(&controllers, "controllers", 3, "with --distributed: how many controller members")
	f.BoolVar(&csi, "csi", false, "run embedded tether on a fake CSI driver served in this process (not with --cloud or --distributed)")
	f.BoolVar(&cfg.UI, "ui", false, "serve the operator's web page for the run (loopback) and print its address: the fleet, kills and faults as they happen")
	cloudFlags(f, &cfg.Cloud, &cfg.LoopVolumeSize)
	return cmd
}

// Chaos on the loop cloud: smaller defaults and bounds (each volume is a
// loop device and an ext4 filesystem on this host, formatted, checked and
// mounted again each time a workload moves; each node an agent mounting
// them).
const (
	loopChaosVolumes  = 6
	loopChaosNodes    = 3
	loopChaosDuration = 30 * time.Second
	maxLoopVolumes    = 32
	maxLoopNodes      = 8
)

// validateLoopChaos checks --cloud (loop: root only, embedded only, within
// the loop bounds) and gives the loop cloud its defaults where the flags
// were not given.
func validateLoopChaos(fs *pflag.FlagSet, cfg *chaos.Config, dist bool) error {
	v := validator{fs: fs}
	if err := v.checkCloud(); err != nil {
		return err
	}
	if cfg.Cloud != process.CloudLoop {
		return nil
	}
	if dist {
		v.refuse("cloud", "not with --distributed (its agents and the cloud service run on the sim); run chaos on the loop cloud embedded")
		return v.err
	}
	if v.given("volumes") {
		v.count("volumes", 1, maxLoopVolumes, "with --cloud loop: each is a loop device and an ext4 filesystem on this host")
	} else {
		cfg.Volumes = loopChaosVolumes
	}
	if v.given("nodes") {
		v.count("nodes", 2, maxLoopNodes, "with --cloud loop: each node's agent formats and mounts on this host")
	} else {
		cfg.Nodes = loopChaosNodes
	}
	if !v.given("duration") {
		cfg.Duration = loopChaosDuration
	}
	return v.err
}

// maxCSINodes bounds --nodes with --csi: each node has a node plugin
// socket of its own, served in this process.
const maxCSINodes = 64

// validateCSIChaos checks --csi: embedded only, on no other cloud, within
// its bounds.
func validateCSIChaos(fs *pflag.FlagSet, dist, csi bool) error {
	if !csi {
		return nil
	}
	v := validator{fs: fs}
	switch {
	case dist:
		v.refuse("distributed", "not with --csi (the fake CSI driver is served inside the embedded run's process); run chaos on CSI embedded")
	case v.given("cloud"):
		v.refuse("cloud", "not with --csi (--csi runs tether on a fake CSI driver, which is the cloud)")
	}
	v.count("nodes", 2, maxCSINodes, "with --csi: each node has its own node plugin socket in this process")
	return v.err
}

// validateDistributedChaos checks the flags that --distributed changes.
func validateDistributedChaos(fs *pflag.FlagSet, dist bool) error {
	v := validator{fs: fs}
	if !dist {
		if fs.Changed("controllers") {
			v.refuse("controllers", "only with --distributed")
		}
		return v.err
	}
	v.count("controllers", 1, 9, "each member is a process of its own")
	v.count("nodes", 2, 50, "each node's agent is a process of its own")
	for _, name := range []string{"cloud-qps", "cloud-max-inflight"} {
		if fs.Changed(name) {
			v.refuse(name, "not with --distributed (the members use no client-side cloud limit)")
		}
	}
	return v.err
}

func printChaos(cmd *cobra.Command, rep chaos.Report, deadline time.Duration) {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "seed %d: %d kills, %d restarts, %d faults injected, %d forced detaches\n", rep.Seed, rep.Kills, rep.Restarts, rep.Faults, rep.ForcedDetaches)
	printCounts(out, rep.KillsByKind)
	printCounts(out, rep.FaultsByKind)
	if rep.DriverCalls > 0 {
		fmt.Fprintf(out, "csi driver: %d mutating calls received; faults injected into them:\n", rep.DriverCalls)
		printCounts(out, rep.DriverFaults)
	}
	if rep.DisksChecked > 0 {
		fmt.Fprintf(out, "disks checked (the device each mount shows holds the volume's image): %d\n", rep.DisksChecked)
	}
	fmt.Fprintf(out, "violations: %d\n", rep.Violations)
	for _, v := range rep.Found {
		fmt.Fprintln(out, "  "+v.String())
		for _, h := range v.History {
			fmt.Fprintln(out, "      "+h)
		}
	}
	if rep.Converged {
		fmt.Fprintf(out, "converged in %.2fs after faults stopped\n", rep.ConvergeSeconds)
	} else {
		fmt.Fprintf(out, "NOT converged within %s (the I5 violations above)\n", deadline)
	}
}

// printCounts prints m's counts, one a line, sorted by kind.
func printCounts(out io.Writer, m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "  %-24s %d\n", k, m[k])
	}
}
