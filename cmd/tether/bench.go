package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/verify/bench"
)

func benchCommand() *cobra.Command {
	cfg := bench.DefaultConfig()
	var asJSON, verbose, dist bool
	var cpuProfile string
	dcfg := bench.DistConfig{Controllers: 3}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Time a fleet's life on the embedded runtime (durable store and cloud, agents mounting) against bare Proto.Actor",
		Long: `bench starts tether as tether up runs it, in a temporary directory, and times
fleet_start, verify, restart, node_loss, churn and teardown until the ground
truth (the cloud's attachments, the mounts made) shows each done. Beside each
phase: actor messages, cloud calls by method, fsyncs, and the ratio to bare
Proto.Actor delivering as many messages in the same run.

--distributed runs the same shape twice in one invocation: embedded first,
then a distributed tether on this machine (etcd, the cloud service,
--controllers members and one agent per node, each a process of this same
tether binary on loopback), through the same phases, each distributed phase
with its ratio to the embedded one, etcd's requests, the members' cloud
calls, CPU time and peak RSS, and lease lapses.`,
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
			if dist {
				dcfg.Config = cfg
				return runDistributedBench(cmd, dcfg, asJSON, cpuProfile)
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
	f.IntVar(&cfg.Volumes, "volumes", cfg.Volumes, "volumes (and workloads, one volume each); with --distributed default "+distVolumes)
	f.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "nodes, each with its sim instance and node agent; with --distributed default "+distNodes+" (at most 500: an agent process each)")
	f.DurationVar(&cfg.CloudLatency, "cloud-latency", 0, "latency added to every sim cloud call (0 to 10s)")
	f.IntVar(&cfg.AttachLimit, "attach-limit", process.DefaultAttachLimit, "volumes each sim instance may have attached (1 to 100000); a node holds its share of the volumes, and during churn the volumes moving onto it too (a shape that does not fit is refused, naming the limit it needs)")
	f.StringVar(&cfg.Mounter, "mounter", cfg.Mounter, "symlink (no privileges), bind (real bind mounts; root; every agent shares this host's mount table) or memory (an in-memory mount table per node: the agents' logic without the kernel's mount work, for the control plane's figures)")
	f.DurationVar(&cfg.SyncPeriod, "sync-period", cfg.SyncPeriod, "the controller's verification period")
	f.DurationVar(&cfg.PhaseTimeout, "phase-timeout", cfg.PhaseTimeout, "bound of each phase")
	f.DurationVar(&cfg.PassivateAfter, "passivate-after", cfg.PassivateAfter, "settled volumes' actors stop after this long idle (tether up: 1m); 0 never")
	f.StringVar(&cfg.Dir, "dir", "", "where to make the temporary data directory (default: the system's)")
	f.StringVar(&cfg.MachinesDir, "machines-dir", "", "where to make the simulated machines' disks (each node's mounts, the sim volumes' contents), apart from the store and the cloud's state, as on a real fleet (default: inside the data directory)")
	f.BoolVar(&asJSON, "json", false, `print one JSON object: {"phases":[{"name","seconds","messages","cloud_calls","fsyncs","baseline_ratio"}],"heap_bytes_per_volume","peak_rss_bytes",...}`)
	f.BoolVar(&verbose, "verbose", false, "show tether's warnings and errors on stderr")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	f.StringVar(&cfg.ProfilePhase, "profile-phase", "", "with --cpuprofile: profile this phase only (fleet_start, verify, restart, node_loss, churn, teardown)")
	f.StringVar(&cfg.HeapProfile, "heapprofile", "", "write a heap profile at rest, after the fleet start, to this file (go tool pprof)")
	f.BoolVar(&dist, "distributed", false, "run the same shape embedded, then distributed (etcd, the cloud service, --controllers members, an agent per node: processes of this tether binary on loopback), and compare them phase by phase")
	f.IntVar(&dcfg.Controllers, "controllers", dcfg.Controllers, "with --distributed: how many controller members (1 to 9)")
	f.StringVar(&dcfg.MemberProfiles, "cpuprofile-members", "", "with --distributed: write a CPU profile of every member over every distributed phase into this directory (<phase>.controller-<i>.pprof)")
	return cmd
}

func validateBench(fs *pflag.FlagSet) error {
	v := validator{fs: fs}
	dist, _ := fs.GetBool("distributed")
	if dist {
		// Its own default shape: a process per node.
		for name, val := range map[string]string{"volumes": distVolumes, "nodes": distNodes} {
			if !v.given(name) {
				_ = fs.Set(name, val)
			}
		}
	}
	v.count("volumes", 1, 1_000_000, "one workload each")
	if dist {
		v.count("nodes", 1, bench.MaxDistNodes, "with --distributed each node's agent is a process")
		v.count("controllers", 1, 9, "each member is a process")
		for _, name := range []string{"mounter", "machines-dir"} {
			if v.given(name) {
				v.refuse(name, "not with --distributed (each agent is a process of its own, mounting with symlinks in the fleet's directory)")
			}
		}
	} else {
		v.count("nodes", 1, 100_000, "all in this one process")
		for _, name := range []string{"controllers", "cpuprofile-members"} {
			if v.given(name) {
				v.refuse(name, "only with --distributed")
			}
		}
	}
	if dist && v.err == nil && !v.given("attach-limit") {
		// Its shapes are few nodes with many volumes each: the limit they
		// need (both sides get it), at least the sim's own.
		vols, _ := fs.GetInt("volumes")
		nodes, _ := fs.GetInt("nodes")
		_ = fs.Set("attach-limit", strconv.Itoa(max(process.DefaultAttachLimit, bench.PeakPerNode(vols, nodes))))
	}
	v.attachLimit("attach-limit") // bench.MaxAttachLimit is maxAttachLimit
	v.atLeast("sync-period", minSyncPeriod, "as tether up's --sync-period")
	return v.err
}

// tether bench --distributed's default shape (each node is an agent
// process): the acceptance's, 2,000 volumes over 20 nodes.
const (
	distVolumes = "2000"
	distNodes   = "20"
)

// runDistributedBench runs tether bench --distributed: the processes run
// this very binary (os.Executable), so that both sides are the same build.
func runDistributedBench(cmd *cobra.Command, cfg bench.DistConfig, asJSON bool, cpuProfile string) error {
	var err error
	if cfg.Binary, err = os.Executable(); err != nil {
		return fmt.Errorf("bench: finding this tether binary for the fleet's processes: %w", err)
	}
	if cpuProfile != "" {
		cfg.CPUProfile = cpuProfile // the embedded side's process
		if cfg.ProfilePhase == "" {
			cfg.ProfilePhase = "fleet_start"
		}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	// Interrupted, the run stops its fleet's processes before the command
	// ends (the directory is kept, with the logs, as after any failure).
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.RunDistributed(ctx, cfg)
	if res != nil { // what was measured, with the error on stderr
		if asJSON {
			b, jerr := json.Marshal(res)
			if jerr != nil {
				return jerr
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
		} else {
			printDistBench(cmd.OutOrStdout(), res)
		}
	}
	return err
}

func printDistBench(out io.Writer, r *bench.DistResult) {
	if r.Embedded != nil && len(r.Embedded.Phases) > 0 {
		printBench(out, r.Embedded)
		fmt.Fprintln(out)
	}
	d := r.Distributed
	fmt.Fprintf(out, "distributed: %d members, %d agents, etcd and the cloud as processes (started and every node ready in %.1fs)\n\n", r.Controllers, r.Nodes, d.StartSeconds)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PHASE\tSECONDS\tx EMBEDDED\tSTORE REQ\tPER DOC\tKV PER DOC\tFSYNCS\tMEMBER CPU s\tMEMBER PEAK RSS MiB\tLAPSES\tNOTE")
	for _, p := range d.Phases {
		if !p.Applicable {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\tnot applicable: %s\n", p.Name, p.Note)
			continue
		}
		var cpu []string
		var rss []string
		for _, m := range p.Members {
			cpu = append(cpu, fmt.Sprintf("%.1f", m.CPUSeconds))
			rss = append(rss, fmt.Sprintf("%.0f", float64(m.PeakRSSBytes)/(1<<20)))
		}
		fmt.Fprintf(w, "%s\t%.2f\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t%d\t%s\n", p.Name, p.Seconds, ratioText(p.RatioToEmbedded), p.StoreRequests.Total,
			ratioText(p.StoreRequests.PerDocument), ratioText(p.StoreRequests.KVPerDocument), p.Fsyncs, strings.Join(cpu, " "), strings.Join(rss, " "), p.LeaseLapses, p.Note)
	}
	w.Flush()
	fmt.Fprintf(out, "\nlease lapses over the run: %d\n", d.LeaseLapses)
	if d.Dir != "" {
		fmt.Fprintf(out, "the fleet's directory (every process's log) is kept: %s\n", d.Dir)
	}
}

func ratioText(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *r)
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
