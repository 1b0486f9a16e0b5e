package main

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
)

func cloudCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cloud",
		Short: "The sim cloud as a service of its own",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(cloudServeCommand())
	return cmd
}

func cloudServeCommand() *cobra.Command {
	var cfg process.CloudConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve one durable sim cloud over gRPC, for every tether process to share",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateCloudServe(cmd.Flags()); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return process.ServeCloud(ctx, cfg, cmd.OutOrStdout(), nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", "tether-cloud", "where the cloud keeps its state and its volumes' content")
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:7072", "listen address (loopback unless --allow-remote)")
	f.BoolVar(&cfg.AllowRemote, "allow-remote", false, "listen beyond loopback (needs mutual TLS: --tls-cert, --tls-key and --tls-client-ca)")
	f.StringVar(&cfg.TLS.Cert, "tls-cert", "", "serve over TLS with this certificate (PEM; tether certs makes one)")
	f.StringVar(&cfg.TLS.Key, "tls-key", "", "the key of --tls-cert (PEM)")
	f.StringVar(&cfg.TLS.ClientCA, "tls-client-ca", "", "require client certificates signed by this CA (mutual TLS)")
	f.DurationVar(&cfg.Sim.Latency, "sim-latency", 0, "latency the cloud adds to every call")
	f.Float64Var(&cfg.Sim.ThrottleRate, "sim-throttle", 0, "calls per second the cloud accepts before throttling (0: unlimited; otherwise 0.1 to 1000000)")
	attachLimitFlag(f, &cfg.Sim.AttachLimit, "attach-limit")
	f.BoolVar(&cfg.Sim.Permissive, "permissive", false, "accept a second attach of an exclusive volume, as a multi-attach disk would (tether's own checks must hold I1)")
	return cmd
}

func validateCloudServe(fs *pflag.FlagSet) error {
	v := validator{fs: fs}
	v.nonEmpty("data-dir")
	v.hostPort("addr")
	v.atLeast("sim-latency", 0, "latency the cloud adds to each call")
	v.rate("sim-throttle")
	v.attachLimit("attach-limit")
	return v.err
}
