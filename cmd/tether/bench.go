package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/bench"
	"github.com/tether/tether/cloud/sim"
)

func benchCommand() *cobra.Command {
	cfg := bench.DefaultConfig()
	var asJSON, verbose bool
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Time a fleet's life on the embedded runtime (durable store and cloud, agents mounting) against bare Proto.Actor",
		Long: `bench starts tether as tether up runs it, in a temporary directory, and times
fleet_start, verify, restart, node_loss, churn and teardown until the ground
truth (the cloud's attachments, the mounts made) shows each done. Beside each
phase: actor messages, cloud calls by method, fsyncs, and the ratio to bare
Proto.Actor delivering as many messages in the same run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateBench(cmd.Flags()); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			if verbose {
				cfg.Log = cmd.ErrOrStderr()
			}
			if !asJSON {
				cfg.Progress = cmd.ErrOrStderr()
			}
			if cpuProfile != "" && cfg.ProfilePhase != "" {
				cfg.CPUProfile = cpuProfile
			} else if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			res, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				if res != nil && len(res.Phases) > 0 && !asJSON {
					printBench(cmd.OutOrStdout(), res)
				}
				return err
			}
			if asJSON {
				b, err := json.Marshal(res)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			printBench(cmd.OutOrStdout(), res)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Volumes, "volumes", cfg.Volumes, "volumes (and workloads, one volume each)")
	f.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "nodes, each with its sim instance and node agent")
	f.DurationVar(&cfg.CloudLatency, "cloud-latency", 0, "latency added to every sim cloud call (0 to 10s)")
	f.IntVar(&cfg.AttachLimit, "attach-limit", sim.DefaultAttachLimit, "volumes each sim instance may have attached (1 to 100000); a node holds its share of the volumes, and during churn the volumes moving onto it too (a shape that does not fit is refused, naming the limit it needs)")
	f.StringVar(&cfg.Mounter, "mounter", cfg.Mounter, "symlink (no privileges) or bind (real bind mounts; root; every agent shares this host's mount table)")
	f.DurationVar(&cfg.SyncPeriod, "sync-period", cfg.SyncPeriod, "the controller's verification period")
	f.DurationVar(&cfg.PhaseTimeout, "phase-timeout", cfg.PhaseTimeout, "bound of each phase")
	f.StringVar(&cfg.Dir, "dir", "", "where to make the temporary data directory (default: the system's)")
	f.StringVar(&cfg.MachinesDir, "machines-dir", "", "where to make the simulated machines' disks (each node's mounts, the sim volumes' contents), apart from the store and the cloud's state, as on a real fleet (default: inside the data directory)")
	f.BoolVar(&asJSON, "json", false, `print one JSON object: {"phases":[{"name","seconds","messages","cloud_calls","fsyncs","baseline_ratio"}],"heap_bytes_per_volume","peak_rss_bytes",...}`)
	f.BoolVar(&verbose, "verbose", false, "show tether's warnings and errors on stderr")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	f.StringVar(&cfg.ProfilePhase, "profile-phase", "", "with --cpuprofile: profile this phase only (fleet_start, verify, restart, node_loss, churn, teardown)")
	f.StringVar(&cfg.HeapProfile, "heapprofile", "", "write a heap profile at rest, after the fleet start, to this file (go tool pprof)")
	return cmd
}

func validateBench(fs *pflag.FlagSet) error {
	v := validator{fs: fs}
	v.count("volumes", 1, 1_000_000, "one workload each")
	v.count("nodes", 1, 100_000, "all in this one process")
	v.attachLimit("attach-limit") // bench.MaxAttachLimit is maxAttachLimit
	v.atLeast("sync-period", minSyncPeriod, "as tether up's --sync-period")
	return v.err
}

func printBench(out io.Writer, r *bench.Result) {
	apart := ""
	if r.MachinesApart {
		apart = ", machines' disks apart"
	}
	fmt.Fprintf(out, "tether bench: %d volumes over %d nodes, attach limit %d, mounter %s, cloud latency %gms, sync period %gs, batch %d%s\n\n",
		r.Volumes, r.Nodes, r.AttachLimit, r.Mounter, r.CloudLatencyMillis, r.SyncPeriodSeconds, r.BatchSize, apart)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PHASE\tSECONDS\tMESSAGES\tx BARE\tFSYNCS\tCLOUD CALLS\tNOTE")
	for _, p := range r.Phases {
		fmt.Fprintf(w, "%s\t%.2f\t%d\t%.1f\t%d\t%s\t%s\n", p.Name, p.Seconds, p.Messages, p.BaselineRatio, p.Fsyncs, callsText(p.CloudCalls), p.Note)
	}
	w.Flush()
	fmt.Fprintf(out, "\nbaseline: bare Proto.Actor delivered %d messages over %d actors in %.3fs\n", r.BaselineMessages, r.BaselineActors, r.BaselineSeconds)
	fmt.Fprintf(out, "heap at rest: %.0f bytes per volume; peak RSS %.1f MiB\n", r.HeapBytesPerVolume, float64(r.PeakRSSBytes)/(1<<20))
}

func callsText(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
