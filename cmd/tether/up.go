package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
)

func upCommand() *cobra.Command {
	cfg := process.UpConfig{Embedded: process.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run tether embedded: a cloud (sim, loop devices, or a CSI driver), controller, node agents, durable store, API and metrics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateUp(cmd.Flags()); err != nil {
				return err
			}
			v := validator{fs: cmd.Flags()} // validateUp's, here with its flag
			if err := v.attachLimit("sim-attach-limit"); err != nil {
				return err
			}
			if csi, err := v.checkCSI(&cfg.Embedded); err != nil {
				return err
			} else if !csi {
				if err := v.checkCloud(); err != nil {
					return err
				}
			}
			matchSimThrottle(cmd.Flags(), &cfg.Embedded)
			if err := checkUpExposure(cfg); err != nil {
				return err
			}
			cfg.Embedded.LogOutput = cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return process.Up(ctx, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Embedded.DataDir, "data-dir", defaultDataDir(), "where tether keeps its state, mounts, token and address")
	f.StringVar(&cfg.APIAddr, "api-addr", "127.0.0.1:7070", "API listen address (loopback unless --allow-remote)")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "127.0.0.1:7071", "metrics, /healthz and /readyz listen address")
	f.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow non-loopback listen addresses (the API then needs --tls-cert and --tls-key)")
	registerUpTLS(f, &cfg)
	f.BoolVar(&cfg.Embedded.RebuildStore, "rebuild-store", false, "move tether.db aside and rebuild the desired state from what the cloud has attached and the nodes have mounted (see docs/operating.md: Recovery)")
	f.BoolVar(&cfg.Embedded.AcceptRollback, "accept-rollback", false, "open a store whose newer meta page is damaged at the older one, losing its last commit (tether up refuses such a store otherwise and says what it would lose; see docs/operating.md: Recovery)")
	cloudFlags(f, &cfg.Embedded.Cloud, &cfg.Embedded.Loop.VolumeSize)
	csiFlags(f, &cfg.Embedded.CSI)
	f.IntVar(&cfg.Embedded.Nodes, "nodes", 3, "how many nodes (n1..nN) to run, each with its own agent (1 to 1000)")
	f.DurationVar(&cfg.Embedded.Sim.Latency, "sim-latency", 0, "latency the sim cloud adds to every call")
	f.Float64Var(&cfg.Embedded.Sim.ThrottleRate, "sim-throttle", 0, "calls per second the sim cloud accepts before throttling (0: unlimited; otherwise 0.1 to 1000000)")
	attachLimitFlag(f, &cfg.Embedded.Sim.AttachLimit, "sim-attach-limit")
	cfg.Embedded.CloudLimit = process.DefaultCloudLimit()
	process.ControllerFlags(f, &cfg.Embedded.Controller, &cfg.Embedded.CloudLimit)
	process.EventFlags(f, &cfg.Embedded.Events)
	f.StringVar(&cfg.Embedded.LogLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&cfg.Embedded.LogFormat, "log-format", "text", "text or json")
	return cmd
}

// matchSimThrottle: against a throttled sim cloud, tether's own limit
// defaults to the sim's rate and bucket (a client that knows its cloud's
// limits stays within them), unless --cloud-qps or --cloud-burst say
// otherwise.
func matchSimThrottle(fs *pflag.FlagSet, cfg *process.Config) {
	r := cfg.Sim.ThrottleRate
	if r == 0 {
		return
	}
	given := func(name string) bool {
		_, env := os.LookupEnv("TETHER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")))
		return fs.Changed(name) || env
	}
	if !given("cloud-qps") {
		cfg.CloudLimit.QPS = 0.9 * r // a margin for the two clocks
	}
	if !given("cloud-burst") {
		cfg.CloudLimit.Burst = max(1, int(r)) // the sim's default bucket
	}
}

// maxAttachLimit bounds the sim's attach limit flags: tether up's
// --sim-attach-limit, tether cloud serve's --attach-limit (and tether
// bench's, bench.MaxAttachLimit).
const maxAttachLimit = 100_000

// attachLimitFlag adds a sim attach limit flag: the limit of every
// instance the sim creates. An instance keeps the limit it was created
// with (the sim's durable state records it), so on a data directory that
// has instances already the flag applies to instances created from then on
// (new nodes, replacements), not to those.
func attachLimitFlag(f *pflag.FlagSet, p *int, name string) {
	f.IntVar(p, name, process.DefaultAttachLimit, fmt.Sprintf("volumes each sim instance created from now on may have attached (1 to %d); instances the data directory has already keep the limit they were created with", maxAttachLimit))
}

// attachLimit refuses a sim attach limit flag outside 1..maxAttachLimit;
// it returns v.err.
func (v *validator) attachLimit(name string) error {
	v.count(name, 1, maxAttachLimit, "volumes one sim instance may have attached")
	return v.err
}
