package distributed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/tether/tether/actors/store/etcdserver"
	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/limit"
	"github.com/tether/tether/messages"
)

// FleetConfig is a whole distributed tether on this machine, every part in
// its own process on loopback: one etcd, one cloud, controller members and
// one node agent per node. Multi-process tests and `tether chaos
// --distributed` drive it.
type FleetConfig struct {
	// Binary is the tether executable the processes run.
	Binary string
	// Dir holds everything: etcd's data, the cloud's, each node's, and a
	// log file per process (logs/).
	Dir         string
	Controllers int
	Nodes       []cloud.NodeName
	// Token guards the members' APIs.
	Token string
	// SyncPeriod and Heartbeat are the members' and agents' (0: defaults).
	SyncPeriod, Heartbeat time.Duration
	// Permissive: the cloud accepts a second attach of an exclusive volume
	// (tether alone must hold I1).
	Permissive bool
	// AttachLimit is how many volumes each instance the cloud creates may
	// have attached (tether cloud serve --attach-limit; 0: the sim's
	// default, 39). Instances already in Dir's cloud state keep theirs.
	AttachLimit int
	// Ready bounds the wait for each process to be ready.
	Ready time.Duration
	// Chaos: every member and agent reads chaos commands on its stdin
	// (ControlController, ControlAgent) and records what it does into a
	// journal of its own under Dir/journals/, one file per process started
	// (JournalFiles), for tether chaos --distributed.
	Chaos bool
	// CloudTimeout, PrepareTimeout and RetireAfter are the members' (0:
	// defaults); Backoff the members' and the agents'.
	// CSI, if set, makes a CSI driver the cloud instead of `tether cloud
	// serve`: every member is given its controller plugin's socket, each
	// node's agent its own node plugin's.
	CSI *FleetCSI
	// CloudLimit is every member's client-side cloud limit (--cloud-qps,
	// --cloud-burst, --cloud-max-inflight); the zero Config: none, as an
	// embedded tether's tests run (tether controller's own default is
	// tether up's, limit.Defaults).
	CloudLimit limit.Config
	// EtcdTLS serves etcd over mutual TLS only, with certificates of a
	// CA made for the fleet (EtcdClientTLS): every member and agent dials
	// it with --etcd-tls-*.
	EtcdTLS bool
	// RemoteTLS runs remote traffic over mutual TLS: every member and
	// agent is started with --remote-tls-* and a certificate of its own,
	// issued by the fleet's CA (as `tether certs --process` issues them;
	// the CA is EtcdTLS's when both are set). StartMisconfiguredController
	// starts a member that breaks this.
	RemoteTLS bool
	// JoinTimeout is every member's --join-timeout (0: its default).
	JoinTimeout                               time.Duration
	CloudTimeout, PrepareTimeout, RetireAfter time.Duration
	Backoff                                   Backoff
	// MemberDebug gives every member a metrics endpoint and a profiling
	// one on free loopback ports (--metrics-addr, --pprof-addr:
	// ControllerDebug), for tether bench --distributed.
	MemberDebug bool
	// CloudLatency is added to every call of the cloud service
	// (--sim-latency).
	CloudLatency time.Duration
}

// Fleet is a running FleetConfig.
// FleetCSI is where a fleet's CSI driver listens: its controller plugin,
// and a node plugin for each node (several node plugins of one driver on
// one machine, each with its own node ID, as a fake serves them).
type FleetCSI struct {
	ControllerSocket string
	NodeSockets      map[cloud.NodeName]string
}

type Fleet struct {
	cfg       FleetConfig
	Etcd      *etcdserver.Server
	cloudAddr string
	mu        sync.Mutex
	cloud     *proc
	members   []*member
	agents    map[cloud.NodeName]*proc
	started   map[string]int    // processes started, by name
	journals  map[string]string // the latest journal, by process name
}

// member is one controller slot: its proxy (the address it advertises)
// stays across restarts of its process.
type member struct {
	proxy          *proxy
	proc           *proc
	api            string // "" : no API (a misconfigured member)
	name           string // the process's name (logs, journals)
	metrics, pprof string // MemberDebug
}

// StartFleet starts etcd, the cloud, the members and the agents, and waits
// for each to be ready. On error everything started is stopped.
func StartFleet(cfg FleetConfig) (f *Fleet, err error) {
	if cfg.Binary == "" || cfg.Dir == "" || cfg.Controllers < 1 {
		return nil, errors.New("fleet: a binary, a directory and at least one controller are required")
	}
	if cfg.Ready == 0 {
		cfg.Ready = 60 * time.Second
	}
	for _, d := range []string{"logs", "journals"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	f = &Fleet{cfg: cfg, agents: map[cloud.NodeName]*proc{}, started: map[string]int{}, journals: map[string]string{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, f.Stop())
			f = nil
		}
	}()
	etcdLog, err := os.OpenFile(f.logPath("etcd"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return f, err
	}
	ec := etcdserver.Config{Dir: filepath.Join(cfg.Dir, "etcd"), Log: etcdLog}
	if cfg.EtcdTLS {
		if ec.TLS, err = f.makeEtcdCerts(); err != nil {
			return f, err
		}
	}
	f.Etcd, err = etcdserver.Start(ec)
	if err != nil {
		return f, err
	}
	f.cloudAddr, err = freeAddr()
	if err != nil {
		return f, err
	}
	if cfg.CSI == nil {
		if err := f.StartCloud(); err != nil {
			return f, err
		}
	}
	for i := range cfg.Controllers {
		p, err := newProxy("127.0.0.1:0")
		if err != nil {
			return f, err
		}
		f.members = append(f.members, &member{proxy: p})
		if err := f.StartController(i); err != nil {
			return f, err
		}
	}
	for _, n := range cfg.Nodes {
		if err := f.StartAgent(n); err != nil {
			return f, err
		}
	}
	return f, nil
}

func (f *Fleet) logPath(name string) string { return filepath.Join(f.cfg.Dir, "logs", name+".log") }

// CloudAddr is the cloud service's address (the same across restarts).
func (f *Fleet) CloudAddr() string { return f.cloudAddr }

func (f *Fleet) common() []string {
	args := []string{"--etcd", strings.Join(f.Etcd.Endpoints(), ",")}
	if f.cfg.EtcdTLS {
		ca, cert, key := f.EtcdClientTLS()
		args = append(args, "--etcd-tls-ca", ca, "--etcd-tls-cert", cert, "--etcd-tls-key", key)
	}
	if f.cfg.CSI != nil {
		return args
	}
	return append(args, "--cloud", f.cloudAddr)
}

// certsDir holds the fleet's CA and certificates (EtcdTLS, RemoteTLS).
func (f *Fleet) certsDir() string { return filepath.Join(f.cfg.Dir, "certs") }

// makeEtcdCerts makes a CA, etcd's certificate and the fleet processes'
// client certificate ("tether"), all for loopback.
func (f *Fleet) makeEtcdCerts() (*etcdserver.TLSFiles, error) {
	dir := f.certsDir()
	o, err := f.ensureCA(dir)
	if err != nil {
		return nil, err
	}
	if _, err := certs.WriteProcesses(dir, []string{"etcd", "tether"}, o); err != nil {
		return nil, err
	}
	cert, key := certs.ProcessFiles(dir, "etcd")
	return &etcdserver.TLSFiles{Cert: cert, Key: key, CA: filepath.Join(dir, certs.CAFile)}, nil
}

// EtcdClientTLS are the files a client of the fleet's etcd presents
// (EtcdTLS): the CA, and the "tether" process's certificate and key.
func (f *Fleet) EtcdClientTLS() (ca, cert, key string) {
	cert, key = certs.ProcessFiles(f.certsDir(), "tether")
	return filepath.Join(f.certsDir(), certs.CAFile), cert, key
}

// StartCloud starts the cloud service (again), on its address and data.
func (f *Fleet) StartCloud() error {
	args := []string{"cloud", "serve", "--data-dir", filepath.Join(f.cfg.Dir, "cloud"), "--addr", f.cloudAddr}
	if f.cfg.Permissive {
		args = append(args, "--permissive")
	}
	if f.cfg.AttachLimit > 0 {
		args = append(args, "--attach-limit", strconv.Itoa(f.cfg.AttachLimit))
	}
	if f.cfg.CloudLatency > 0 {
		args = append(args, "--sim-latency", f.cfg.CloudLatency.String())
	}
	p, _, err := startProc("cloud", f.cfg.Binary, args, f.logPath("cloud"), "tether cloud serving", f.cfg.Ready)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.cloud = p
	f.mu.Unlock()
	return nil
}

// KillCloud SIGKILLs the cloud service.
func (f *Fleet) KillCloud() error {
	f.mu.Lock()
	p := f.cloud
	f.cloud = nil
	f.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.kill()
}

// StartController starts member i's process (again): a new process on a
// new port, behind the member's proxy.
func (f *Fleet) StartController(i int) error {
	m := f.members[i]
	real, err := freeAddr()
	if err != nil {
		return err
	}
	api, err := freeAddr()
	if err != nil {
		return err
	}
	args := append(f.common(), "--remote-addr", real, "--remote-advertise", m.proxy.addr(), "--api-addr", api, "--token", f.cfg.Token)
	if f.cfg.SyncPeriod > 0 {
		args = append(args, "--sync-period", f.cfg.SyncPeriod.String())
	}
	if c := f.cfg.CSI; c != nil {
		args = append(args, "--csi-controller-socket", c.ControllerSocket)
	}
	cl := f.cfg.CloudLimit
	args = append(args, "--cloud-qps", strconv.FormatFloat(cl.QPS, 'g', -1, 64), "--cloud-max-inflight", strconv.Itoa(cl.MaxInFlight))
	if cl.Burst > 0 {
		args = append(args, "--cloud-burst", strconv.Itoa(cl.Burst))
	}
	for _, t := range []struct {
		flag string
		d    time.Duration
	}{{"--cloud-timeout", f.cfg.CloudTimeout}, {"--prepare-timeout", f.cfg.PrepareTimeout}, {"--retire-after", f.cfg.RetireAfter}, {"--join-timeout", f.cfg.JoinTimeout}} {
		if t.d > 0 {
			args = append(args, t.flag, t.d.String())
		}
	}
	var metricsAddr, pprofAddr string
	if f.cfg.MemberDebug {
		if metricsAddr, err = freeAddr(); err != nil {
			return err
		}
		if pprofAddr, err = freeAddr(); err != nil {
			return err
		}
		args = append(args, "--metrics-addr", metricsAddr, "--pprof-addr", pprofAddr)
	}
	name := fmt.Sprintf("controller-%d", i)
	if f.cfg.RemoteTLS {
		tlsArgs, err := f.remoteTLSArgs(name)
		if err != nil {
			return err
		}
		args = append(args, tlsArgs...)
	}
	m.proxy.retarget(real)
	p, err := f.start(name, append([]string{"controller"}, args...), "tether controller member")
	if err != nil {
		return err
	}
	f.mu.Lock()
	m.proc, m.api, m.name = p, api, name
	m.metrics, m.pprof = metricsAddr, pprofAddr
	f.mu.Unlock()
	return nil
}

// KillController SIGKILLs member i's process.
func (f *Fleet) KillController(i int) error {
	f.mu.Lock()
	m := f.members[i]
	p := m.proc
	m.proc = nil
	f.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.kill()
}

// ControllerExit waits up to d for member i's process to end: ended
// reports whether it did, err its exit (nil: status 0).
func (f *Fleet) ControllerExit(i int, d time.Duration) (ended bool, err error) {
	f.mu.Lock()
	p := f.members[i].proc
	f.mu.Unlock()
	if p == nil {
		return true, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true, p.err
	case <-t.C:
		return false, nil
	}
}

// TerminateController sends member i's process SIGTERM and returns how
// long it took to exit, SIGKILLing it after grace (killed).
func (f *Fleet) TerminateController(i int, grace time.Duration) (took time.Duration, killed bool, err error) {
	f.mu.Lock()
	p := f.members[i].proc
	f.members[i].proc = nil
	f.mu.Unlock()
	if p == nil {
		return 0, false, nil
	}
	start := time.Now()
	if err := p.signal(syscall.SIGTERM, grace); err == nil {
		return time.Since(start), false, nil
	}
	return time.Since(start), true, p.kill()
}

// Partition cuts member i off from every other process's remote traffic
// (on), or heals it. Its etcd and cloud connections stay.
func (f *Fleet) Partition(i int, on bool) { f.members[i].proxy.block(on) }

// NodeDir is node n's directory.
func (f *Fleet) NodeDir(n cloud.NodeName) string { return filepath.Join(f.cfg.Dir, "nodes", string(n)) }

// StartAgent starts node n's agent (again).
func (f *Fleet) StartAgent(n cloud.NodeName) error {
	args := append([]string{"agent"}, f.common()...)
	args = append(args, "--node", string(n), "--data-dir", f.NodeDir(n))
	if c := f.cfg.CSI; c != nil {
		args = append(args, "--csi-node-socket", c.NodeSockets[n])
	} else {
		args = append(args, "--mounter", "symlink")
	}
	if f.cfg.Heartbeat > 0 {
		args = append(args, "--heartbeat", f.cfg.Heartbeat.String())
	}
	if f.cfg.RemoteTLS {
		tlsArgs, err := f.remoteTLSArgs("agent-" + string(n))
		if err != nil {
			return err
		}
		args = append(args, tlsArgs...)
	}
	p, err := f.start("agent-"+string(n), args, "tether agent of node")
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.agents[n] = p
	f.mu.Unlock()
	return nil
}

// start starts the member or agent process name with args, adding the
// flags of FleetConfig.Chaos and Backoff.
func (f *Fleet) start(name string, args []string, ready string) (*proc, error) {
	if b := f.cfg.Backoff; b.Initial > 0 || b.Max > 0 {
		args = append(args, "--backoff-initial", b.Initial.String(), "--backoff-max", b.Max.String())
	}
	var journal string
	if f.cfg.Chaos {
		f.mu.Lock()
		f.started[name]++
		journal = filepath.Join(f.cfg.Dir, "journals", fmt.Sprintf("%s.%d.jsonl", name, f.started[name]))
		f.journals[name] = journal
		f.mu.Unlock()
		args = append(args, "--journal", journal, "--chaos-control")
	}
	p, _, err := startProc(name, f.cfg.Binary, args, f.logPath(name), ready, f.cfg.Ready)
	return p, err
}

// KillAgent SIGKILLs node n's agent. Its mounts stay, as a crashed agent's
// would.
func (f *Fleet) KillAgent(n cloud.NodeName) error {
	f.mu.Lock()
	p := f.agents[n]
	delete(f.agents, n)
	f.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.kill()
}

// API connects to the API of a running member (the first one up) and
// returns a client and a context carrying the token.
func (f *Fleet) API(ctx context.Context) (messages.TetherClient, context.Context, func() error, error) {
	f.mu.Lock()
	var addr string
	for _, m := range f.members {
		if m.proc != nil && !m.proc.exited() && m.api != "" {
			addr = m.api
			break
		}
	}
	f.mu.Unlock()
	if addr == "" {
		return nil, nil, nil, errors.New("fleet: no controller running")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, nil, err
	}
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+f.cfg.Token)
	return messages.NewTetherClient(conn), ctx, conn.Close, nil
}

// Stop stops every process (SIGTERM, then SIGKILL after a grace) and etcd.
// It leaves the directory alone.
func (f *Fleet) Stop() error {
	var errs []error
	f.mu.Lock()
	agents, members, cl := f.agents, f.members, f.cloud
	f.agents, f.cloud = map[cloud.NodeName]*proc{}, nil
	f.mu.Unlock()
	for _, p := range agents {
		errs = append(errs, p.stop(10*time.Second))
	}
	for _, m := range members {
		if m.proc != nil {
			errs = append(errs, m.proc.stop(15*time.Second))
			m.proc = nil
		}
		errs = append(errs, m.proxy.close())
	}
	if cl != nil {
		errs = append(errs, cl.stop(10*time.Second))
	}
	if f.Etcd != nil {
		errs = append(errs, f.Etcd.Stop())
	}
	return errors.Join(errs...)
}

// freeAddr returns a loopback address with a port free right now. The
// port is picked below the range the kernel takes the local ports of
// outgoing connections from (where it can), so that no connection takes
// it before the process it is for binds it, nor while that process is
// down and to be started again on it (the cloud).
func freeAddr() (string, error) {
	if lo := ephemeralLow(); lo > lowestPort+1000 {
		for range 100 {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(lowestPort+rand.IntN(lo-lowestPort))))
			if err != nil {
				continue
			}
			defer l.Close()
			return l.Addr().String(), nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// lowestPort is the lowest port freeAddr picks.
const lowestPort = 10000

// ephemeralLow is the first port of the kernel's range for outgoing
// connections (0 if unknown).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	lo, _ := strconv.Atoi(f[0])
	return lo
}
