package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/process/distributed"
)

// distributedFlags are the flags every process of distributed mode shares.
func distributedFlags(f *pflag.FlagSet, etcd *[]string, et *distributed.EtcdTLS, prefix *string, rc *distributed.RemoteConfig, cloudAddr *string, ct *distributed.ClientTLS) {
	f.StringSliceVar(etcd, "etcd", []string{"127.0.0.1:2379"}, "etcd endpoints (membership, and the controllers' store); beyond loopback only over mutual TLS (--etcd-tls-*)")
	f.StringVar(&et.CA, "etcd-tls-ca", "", "dial etcd over mutual TLS: the CA that signed etcd's certificate (PEM; tether certs --process etcd,... issues them)")
	f.StringVar(&et.Cert, "etcd-tls-cert", "", "this process's certificate for etcd (mutual TLS)")
	f.StringVar(&et.Key, "etcd-tls-key", "", "the key of --etcd-tls-cert")
	f.StringVar(prefix, "etcd-prefix", "/tether/", "the root of this tether's keys in etcd")
	f.StringVar(&rc.Addr, "remote-addr", "127.0.0.1:0", "where this process listens for Proto.Actor remote traffic (port 0: any free port)")
	f.StringVar(&rc.Advertise, "remote-advertise", "", "the address other processes reach this one at, if not --remote-addr (a proxy in front)")
	f.BoolVar(&rc.AllowRemote, "allow-remote", false, "listen beyond loopback (needs mutual TLS)")
	f.StringVar(&rc.TLS.Cert, "remote-tls-cert", "", "mutual TLS for remote traffic: this process's server certificate (PEM; tether certs makes one)")
	f.StringVar(&rc.TLS.Key, "remote-tls-key", "", "the key of --remote-tls-cert")
	f.StringVar(&rc.TLS.CA, "remote-tls-ca", "", "the CA every peer's certificate must chain to")
	f.StringVar(&rc.TLS.ClientCert, "remote-tls-client-cert", "", "the certificate this process presents when it dials a peer (default: --remote-tls-cert, if it allows client use)")
	f.StringVar(&rc.TLS.ClientKey, "remote-tls-client-key", "", "the key of --remote-tls-client-cert")
	f.StringVar(cloudAddr, "cloud", "127.0.0.1:7072", "the address of tether cloud serve")
	f.StringVar(&ct.CA, "cloud-tls-ca", "", "verify the cloud's certificate against this CA (PEM): dial it over TLS")
	f.StringVar(&ct.Cert, "cloud-tls-cert", "", "this process's certificate for the cloud (mutual TLS)")
	f.StringVar(&ct.Key, "cloud-tls-key", "", "the key of --cloud-tls-cert")
}

func validateDistributed(fs *pflag.FlagSet) error {
	v := validator{fs: fs}
	v.hostPort("remote-addr")
	v.hostPort("cloud")
	v.nonEmpty("etcd-prefix")
	v.logging("log-level", "log-format")
	return v.err
}

// chaosFlags are the hidden flags tether chaos --distributed starts members
// and agents with: a journal, chaos control on stdin, and the short
// operation backoff of a chaos run.
type chaosFlags struct {
	journal                    string
	control                    bool
	backoffInitial, backoffMax time.Duration
}

func (c *chaosFlags) add(f *pflag.FlagSet) {
	f.StringVar(&c.journal, "journal", "", "record what this process does into this file (tether chaos --distributed)")
	f.BoolVar(&c.control, "chaos-control", false, "read chaos commands on stdin (tether chaos --distributed)")
	f.DurationVar(&c.backoffInitial, "backoff-initial", 0, "the first delay of operation retries and actor restarts (0: the default)")
	f.DurationVar(&c.backoffMax, "backoff-max", 0, "the longest delay of operation retries and actor restarts (0: the default)")
	for _, name := range []string{"journal", "chaos-control", "backoff-initial", "backoff-max"} {
		_ = f.MarkHidden(name)
	}
}

func (c *chaosFlags) backoff() distributed.Backoff {
	return distributed.Backoff{Initial: c.backoffInitial, Max: c.backoffMax}
}

// stdin is os.Stdin with --chaos-control, else nil.
func (c *chaosFlags) stdin() io.Reader {
	if c.control {
		return os.Stdin
	}
	return nil
}

func controllerCommand() *cobra.Command {
	cfg := distributed.DefaultMemberConfig()
	var cf chaosFlags
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run one controller member of a distributed tether (a Proto.Actor cluster on etcd)",
		Long: `Run one controller member. Members find each other through etcd and share the
volume and node actors between them (virtual actors placed by identity); the
desired state and node statuses live in etcd. See docs/distributed.md for a
whole cluster by hand.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateDistributed(cmd.Flags()); err != nil {
				return err
			}
			v := validator{fs: cmd.Flags()}
			v.controllerFlags()
			v.eventFlags()
			v.atLeast("join-timeout", time.Second, "a round trip to each peer takes up to 3s, tried again every second")
			v.csiInsteadOfCloud("csi-controller-socket", &cfg.Cloud)
			for _, name := range []string{"metrics-addr", "pprof-addr"} {
				if v.given(name) {
					v.hostPort(name) // loopback: refused at start otherwise, naming the flag
				}
			}
			if v.err != nil {
				return v.err
			}
			cfg.Backoff, cfg.Journal, cfg.Control = cf.backoff(), cf.journal, cf.stdin()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cfg.LogOutput = cmd.ErrOrStderr()
			return runMember(ctx, cmd.OutOrStdout(), cfg)
		},
	}
	f := cmd.Flags()
	distributedFlags(f, &cfg.Etcd, &cfg.EtcdTLS, &cfg.Prefix, &cfg.Remote, &cfg.Cloud, &cfg.CloudTLS)
	f.StringVar(&cfg.APIAddr, "api-addr", "127.0.0.1:7070", "where this member serves tether's API (\"\": none)")
	f.StringVar(&cfg.APIToken, "token", "", "the API's bearer token (\"\": no token; loopback only)")
	f.StringVar(&cfg.APITLS.Cert, "tls-cert", "", "serve the API over TLS with this certificate (PEM)")
	f.StringVar(&cfg.APITLS.Key, "tls-key", "", "the key of --tls-cert")
	f.StringVar(&cfg.APITLS.ClientCA, "tls-client-ca", "", "require API clients to present certificates of this CA")
	f.DurationVar(&cfg.JoinTimeout, "join-timeout", distributed.DefaultJoinTimeout, "how long a starting member tries to reach the members already there over remote before it gives up (it holds no actors until it has)")
	f.DurationVar(&cfg.MemberTTL, "member-ttl", distributed.DefaultMemberTTL, "the lease of this member's place in the cluster: how long after it dies (or loses etcd) the others serve its actors")
	process.ControllerFlags(f, &cfg.Controller, &cfg.CloudLimit)
	process.EventFlags(f, &cfg.Events)
	f.StringVar(&cfg.CSIControllerSocket, "csi-controller-socket", "", "unix socket of a CSI driver's controller plugin on this machine: the driver is the cloud, instead of --cloud (each node's agent is given its node plugin's socket)")
	f.DurationVar(&cfg.CSIWait, "csi-wait", process.DefaultCSIDialTimeout, "how long to wait at start for the CSI controller plugin to be ready")
	f.StringVar(&cfg.DataDir, "data-dir", "", "this member's own directory: with a CSI driver, the secrets volumes name by csi.secretRef (csi-secrets/<name>.json, mode 0600)")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve /metrics (cloud calls, sync passes, the process's CPU and memory), /healthz and /readyz (ready once every volume is restored) here, on loopback (\"\": none)")
	f.StringVar(&cfg.PprofAddr, "pprof-addr", "", "serve Go's profiles (/debug/pprof/) and a CPU profile between POST /debug/cpuprofile/start and /debug/cpuprofile/stop here, on loopback (\"\": none)")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&cfg.LogFormat, "log-format", "text", "text or json")
	cf.add(f)
	f.DurationVar(&cfg.Controller.Volume.PrepareTimeout, "prepare-timeout", cfg.Controller.Volume.PrepareTimeout, "bound of a volume actor's wait for its node actor's answer before a detach")
	f.DurationVar(&cfg.Controller.RetireAfter, "retire-after", cfg.Controller.RetireAfter, "how long the actor of a deleted volume stays idle before it stops")
	for _, name := range []string{"prepare-timeout", "retire-after"} {
		_ = f.MarkHidden(name)
	}
	return cmd
}

func agentCommand() *cobra.Command {
	cfg := distributed.DefaultAgentConfig()
	var nodeName string
	var cf chaosFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent of one node, talking to the controller cluster over Proto.Actor remote",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateDistributed(cmd.Flags()); err != nil {
				return err
			}
			v := validator{fs: cmd.Flags()}
			v.nonEmpty("node")
			v.nonEmpty("data-dir")
			v.eventFlags()
			v.csiInsteadOfCloud("csi-node-socket", &cfg.Cloud)
			if v.given("csi-node-socket") && v.given("mounter") {
				v.refuse("mounter", "not with --csi-node-socket: the CSI node plugin mounts")
			}
			if v.err != nil {
				return v.err
			}
			cfg.Node = distributed.NodeName(nodeName)
			cfg.Backoff, cfg.Journal, cfg.Control = cf.backoff(), cf.journal, cf.stdin()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cfg.LogOutput = cmd.ErrOrStderr()
			a, err := distributed.StartAgent(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tether agent of node %s: remote %s\n", cfg.Node, a.System.Address())
			<-ctx.Done()
			return a.Stop()
		},
	}
	f := cmd.Flags()
	distributedFlags(f, &cfg.Etcd, &cfg.EtcdTLS, &cfg.Prefix, &cfg.Remote, &cfg.Cloud, &cfg.CloudTLS)
	f.StringVar(&nodeName, "node", "", "the node this agent serves (required)")
	f.StringVar(&cfg.Mounter, "mounter", "auto", "auto (bind mounts as root, symlinks otherwise), bind or symlink")
	f.StringVar(&cfg.CSINodeSocket, "csi-node-socket", "", "unix socket of the CSI driver's node plugin on this machine: the agent mounts through it and reports its node ID (NodeGetInfo) to the controllers, instead of --cloud")
	f.DurationVar(&cfg.CSIWait, "csi-wait", process.DefaultCSIDialTimeout, "how long to wait at start for the CSI node plugin to be ready")
	f.StringVar(&cfg.DataDir, "data-dir", "", "the node's directory: its mounts and its state (required)")
	process.EventFlags(f, &cfg.Events)
	f.DurationVar(&cfg.Agent.HeartbeatEvery, "heartbeat", cfg.Agent.HeartbeatEvery, "how often the agent tells the controller it is alive")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&cfg.LogFormat, "log-format", "text", "text or json")
	cf.add(f)
	return cmd
}

// csiInsteadOfCloud: with the CSI socket flag name, the driver is the
// cloud: --cloud and its TLS flags are refused, and the cloud's address
// (its default) cleared; the socket is checked as tether up checks it.
func (v *validator) csiInsteadOfCloud(name string, cloudAddr *string) {
	if !v.given(name) {
		return
	}
	v.checkSocket(name, v.fs.Lookup(name).Value.String())
	for _, other := range []string{"cloud", "cloud-tls-ca", "cloud-tls-cert", "cloud-tls-key"} {
		if v.given(other) {
			v.refuse(other, "not with --"+name+": the CSI driver is the cloud")
		}
	}
	if d, _ := v.fs.GetDuration("csi-wait"); d <= 0 {
		v.refuse("csi-wait", "want a positive duration (1m, 30s)")
	}
	*cloudAddr = ""
}
