package distributed

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/operator/ui"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/verify/journal"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/limit"
	cloudremote "github.com/tether/tether/cloud/remote"
)

// ClusterName is the Proto.Actor cluster's name: members and agents find
// each other under it in etcd.
const ClusterName = "tether"

// DefaultMemberConfig is a member's configuration before flags: the
// controller's defaults and tether's default bound toward the cloud.
func DefaultMemberConfig() MemberConfig {
	return MemberConfig{Controller: controller.DefaultConfig(), CloudLimit: limit.Defaults()}
}

// MemberConfig configures one controller member.
type MemberConfig struct {
	LogLevel, LogFormat string
	LogOutput           io.Writer
	// Etcd lists the etcd endpoints (membership and the store); EtcdTLS
	// dials them over mutual TLS (required beyond loopback).
	Etcd    []string
	EtcdTLS EtcdTLS
	// Prefix roots every key of this tether in etcd (default "/tether/"):
	// the store under it, the cluster's membership under Prefix+"cluster".
	Prefix string
	// Events configures the event log in etcd (TTL, bound per object);
	// zero values are the defaults (1 h, 100).
	Events store.EventOptions
	// MemberTTL is the lease of this member's registration (default
	// DefaultMemberTTL): a member that stops renewing it (killed, cut off
	// from etcd) is out of the cluster that long after, and its actors are
	// served by the others from then on.
	MemberTTL time.Duration
	// Remote is where this member listens for Proto.Actor remote traffic.
	Remote RemoteConfig
	// Cloud is the address of `tether cloud serve`.
	Cloud    string
	CloudTLS ClientTLS
	// CSIControllerSocket, instead of Cloud: the unix socket of a CSI
	// driver's controller plugin on this machine (each node's agent
	// reaches its own node plugin, and reports its node ID); CSIWait
	// bounds the wait for it at start (0: a minute).
	CSIControllerSocket string
	CSIWait             time.Duration
	// JoinTimeout bounds how long the member tries to reach the members
	// already there before it gives up (0: DefaultJoinTimeout): it joins
	// the placement only once it had a round trip over remote with each
	// (peers.go).
	JoinTimeout time.Duration
	// Context, if set, ends the wait for the peers at once when it is
	// done (tether controller's SIGTERM): the start then fails.
	Context context.Context
	// DataDir, if set, is this member's own directory: with a CSI driver,
	// the secrets volumes name (csi-secrets/<name>.json, mode 0600).
	DataDir string
	// APIAddr is where this member serves tether's API ("" : no API).
	APIAddr     string
	APIToken    string
	AllowRemote bool
	APITLS      process.TLSFiles
	Controller  controller.Config
	CloudLimit  limit.Config
	// Backoff, where set, shortens the retries of cloud operations and
	// the actors' respawns and restarts.
	Backoff Backoff
	// Journal, if set, is the file this member records its join, node
	// status writes, volume events, actor restarts and cloud calls into
	// (bootstrap/verify/journal), for tether chaos --distributed.
	Journal string
	// Control, if set, is read for chaos commands (Command) until it
	// ends: actor kills, cloud and store faults.
	Control io.Reader
	// MetricsAddr, if set, is where this member serves /metrics (its
	// cloud calls, sync passes, attachments by state, and the process's
	// CPU and memory), /healthz and /readyz (ready once the controller
	// has restored every volume it started with); loopback only.
	MetricsAddr string
	// PprofAddr, if set, is where this member serves Go's profiles
	// (/debug/pprof/) and a CPU profile between two requests
	// (/debug/cpuprofile/start, /debug/cpuprofile/stop); loopback only.
	PprofAddr string
}

// Member is a running controller member.
type Member struct {
	Log        *logrus.Logger
	System     *actor.ActorSystem
	Cluster    *cluster.Cluster
	Controller *controller.Controller
	Store      *store.Etcd
	Cloud      *cloudremote.Client
	// CSI is the CSI driver's controller plugin (CSIControllerSocket),
	// nil on the sim cloud (Cloud).
	CSI     *process.CSIController
	API     *api.Server
	events  *events.Recorder
	evw     *events.Writer // to the event log beside the store
	journal *journal.Writer
	store   *journalStore // with a journal or control
	faulty  *faultyCloud  // with control
	metrics *metrics.Metrics
	msrv    *metrics.Server // MetricsAddr
	page    *ui.UI          // the operator's page on msrv (page.go)
	pprof   *pprofServer    // PprofAddr
	lost    chan error
	stopped bool
}

// resyncEvery is how often a member resyncs the identities it owns
// (Controller.ResyncEvery).
const resyncEvery = 30 * time.Second

// DefaultMemberTTL is MemberConfig.MemberTTL's default. Proto.Actor's own
// etcd provider used 3 s, which a loaded etcd missed (see membership).
const DefaultMemberTTL = 10 * time.Second

// Lost delivers one error if this member lost its place in the cluster
// (its etcd lease lapsed): the other members have taken its actors over
// and block its identity for good, so it must Stop and start again (a new
// member gets a new identity). The fences keep what it still does
// harmless meanwhile (store.Fences).
func (m *Member) Lost() <-chan error { return m.lost }

func (c *MemberConfig) defaults() {
	if c.Prefix == "" {
		c.Prefix = "/tether/"
	}
	if c.LogOutput == nil {
		c.LogOutput = os.Stderr
	}
	if c.MemberTTL == 0 {
		c.MemberTTL = DefaultMemberTTL
	}
}

// StartMember joins the cluster and starts serving: the store on etcd, the
// cloud over gRPC, this member's share of the volume and node actors, and
// the API. Stop it with Stop.
func StartMember(cfg MemberConfig) (m *Member, err error) {
	cfg.defaults()
	if len(cfg.Etcd) == 0 {
		return nil, errors.New("controller: at least one etcd endpoint is required (--etcd)")
	}
	if (cfg.Cloud == "") == (cfg.CSIControllerSocket == "") {
		return nil, errors.New("controller: give the cloud's address (--cloud) or a CSI driver's controller plugin socket (--csi-controller-socket), one of them")
	}
	if cfg.MemberTTL < 2*time.Second || cfg.MemberTTL%time.Second != 0 {
		return nil, fmt.Errorf("controller: --member-ttl %v: want whole seconds, at least 2s (an etcd lease)", cfg.MemberTTL)
	}
	if err := cfg.CloudLimit.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Remote.check(); err != nil {
		return nil, err
	}
	log, err := process.NewLogger(cfg.LogLevel, cfg.LogFormat, cfg.LogOutput)
	if err != nil {
		return nil, err
	}
	m = &Member{Log: log, events: events.NewRecorder(100), lost: make(chan error, 1)}
	defer func() {
		if err != nil {
			err = errors.Join(err, m.Stop())
			m = nil
		}
	}()
	if m.journal, err = openJournal(cfg.Journal, "controller member"); err != nil {
		return m, err
	}
	endpoints, etcdTLS, err := etcdClient(cfg.Etcd, cfg.EtcdTLS)
	if err != nil {
		return m, fmt.Errorf("controller: %w", err)
	}
	// Cached: every message an actor handles may read the store; from the
	// cache, a read costs one small request shared by all reads in flight.
	m.Store, err = store.OpenEtcd(store.EtcdConfig{Endpoints: endpoints, TLS: etcdTLS, Prefix: cfg.Prefix + "store/",
		Cache: true, Log: log.Warnf})
	if err != nil {
		return m, fmt.Errorf("controller: %w", err)
	}
	evlog, err := m.Store.Events(cfg.Events)
	if err != nil {
		return m, fmt.Errorf("controller: %w", err)
	}
	m.evw = persistEvents(m.events, evlog, log)
	var rc *remote.Config
	if m.Cloud, rc, m.System, err = connect("controller", cfg.Cloud, cfg.CloudTLS, cfg.Remote, log); err != nil {
		return m, err
	}
	if cfg.CSIControllerSocket != "" {
		if m.CSI, err = process.OpenCSIController(cfg.CSIControllerSocket, cfg.CSIWait, m.Store, cfg.DataDir); err != nil {
			return m, fmt.Errorf("controller: %w", err)
		}
		log.Info(m.CSI.Describe())
	}
	cc := cfg.Controller
	for _, p := range []*backoff.Policy{&cc.Volume.Backoff, &cc.Respawn, &cc.Supervisor.Policy} {
		cfg.Backoff.apply(p)
	}
	cc.Guard = spawn.New(m.System)
	cc.Log, cc.Supervisor.Log = log, log
	cc.RegisterNode = m.registerNode
	st, provider := m.chaosHooks(cfg, &cc)
	if cfg.MetricsAddr != "" {
		if m.metrics, err = metrics.New(); err != nil {
			return m, err
		}
		cc.Observer = m.metrics
		provider = metrics.InstrumentProvider(provider, m.metrics)
		if err := m.metrics.StoreRequests(m.Store.Requests); err != nil {
			return m, err
		}
	}
	m.Controller = controller.New(m.System, cc, limit.Wrap(provider, cfg.CloudLimit), st, m.events)
	m.Cluster, err = newCluster(m.System, endpoints, etcdTLS, cfg.Prefix, rc, m.Controller.Kinds(), cfg.MemberTTL, log, func(err error) { m.lost <- err })
	if err != nil {
		return m, err
	}
	// Before the cluster starts: a member registers only once its peers
	// answered it over remote (peers.go), and a newer member pings this
	// one as soon as it is registered.
	if err := spawnPeerActor(m.System); err != nil {
		return m, fmt.Errorf("controller: peer actor: %w", err)
	}
	mp := m.Cluster.Config.ClusterProvider.(*membership)
	mp.peers, mp.joinTimeout, mp.joinCtx = &pinger{sys: m.System, timeout: pingTimeout}, cmp.Or(cfg.JoinTimeout, DefaultJoinTimeout), cfg.Context
	// Before the member joins: from then on other members may activate
	// actors here, and they must resolve identities through the cluster.
	m.Controller.UseCluster(m.Cluster)
	if err := startCluster(m.Cluster, false); err != nil {
		// Never started as a member: Stop shuts the actor system down
		// only, so let go of remote's port here (a member that could not
		// reach its peers tries again on the same address).
		if m.Cluster.Remote != nil {
			m.Cluster.Remote.Shutdown(false)
		}
		m.Cluster = nil
		return m, err
	}
	m.journal.Write(journal.Record{Kind: journal.KindJoined, Text: m.System.ID})
	m.Controller.FollowActivations() // after the identity lookup's subscription, before any resync
	// Subscribed once the cluster started: after its identity lookup,
	// whose placement a resync's sends must already follow (subscribers
	// are told in order). The address is the one remote advertises, known
	// now. Controller.Start below wakes every identity, so nothing before
	// is missed.
	own := newOwners(m.System.Address)
	m.System.EventStream.Subscribe(func(ev any) {
		switch ev := ev.(type) {
		case *cluster.ClusterTopology:
			// Members changed: the actors this member gained are
			// activated here and told the store's state (a member that
			// left took the messages in flight to them along).
			m.Controller.ResyncWhere(own.update(ev.Members))
		case *remote.EndpointConnectedEvent:
			// A connection came (back): messages to this member's
			// actors may have been lost on the way (see
			// Controller.Resync); the other side resyncs its own.
			m.Controller.ResyncWhere(own.mine())
		}
	})
	// Every change of the desired state, whoever committed it, reaches
	// the actors this member owns (Controller.Changed), and only so.
	m.Store.OnDesiredChange(func(vols []cloud.VolumeID) {
		m.Controller.Changed(vols, func(kind, identity string) bool {
			sel := own.mine()
			return sel == nil || sel(kind, identity)
		})
	})
	m.Controller.DesiredFromStore()
	if err := m.Controller.Start(); err != nil {
		return m, err
	}
	m.Controller.ResyncEvery(resyncEvery, own.mine)
	if cfg.APIAddr != "" {
		tc, err := apiTLS(cfg.APITLS)
		if err != nil {
			return m, err
		}
		m.API, err = api.ServeTLS(cfg.APIAddr, cfg.APIToken, m.Controller, m.nodes(), cfg.AllowRemote, tc)
		if err != nil {
			return m, err
		}
	}
	if err := m.serveDebug(cfg); err != nil {
		return m, err
	}
	if cfg.Control != nil {
		go serveControl(cfg.Control, log, m.control)
	}
	log.WithFields(logrus.Fields{"remote": m.System.Address(), "api": m.APIAddr()}).Info("controller member started")
	return m, nil
}

// chaosHooks puts the journal's recorders and the chaos control's faults
// in the controller's way, as cfg asks, and returns the store and the
// cloud the controller is to use.
func (m *Member) chaosHooks(cfg MemberConfig, cc *controller.Config) (store.Store, cloud.Provider) {
	var st store.Store = m.Store
	provider := m.provider()
	if cfg.Journal == "" && cfg.Control == nil {
		return st, provider
	}
	m.store = &journalStore{Store: m.Store, j: m.journal}
	if cfg.Control != nil {
		m.faulty = newFaultyCloud(provider)
		provider = m.faulty
	}
	if j := m.journal; j != nil {
		provider = journalCloud{Provider: provider, j: j}
		m.events.Subscribe(journalEvents(j))
		onRespawn := cc.OnRespawn
		cc.OnRespawn = func(name string, delay time.Duration) {
			j.Write(journal.Record{Kind: journal.KindRestart, Text: name})
			if onRespawn != nil {
				onRespawn(name, delay)
			}
		}
	}
	return m.store, provider
}

// registerNode registers a node its agent announced (controller.Config.
// RegisterNode): an instance where the cloud needs one (the API's
// provisioning of a Node document), then the Node applied.
func (m *Member) registerNode(n cloud.NodeName) error {
	if _, err := m.nodes().AddInstanceChecked(n); err != nil {
		return err
	}
	_, err := m.Controller.ApplyAll([]controller.Change{{Node: &store.NodeSpec{Name: n}}})
	return err
}

// provider is the cloud the controller calls: the CSI driver's
// controller plugin, or the sim cloud served over gRPC.
func (m *Member) provider() cloud.Provider {
	if m.CSI != nil {
		return m.CSI
	}
	return m.Cloud
}

// nodes is the API's administration of instances and disks.
func (m *Member) nodes() cloud.Provisioner {
	if m.CSI != nil {
		return m.CSI
	}
	return m.Cloud
}

// APIAddr is where the API listens ("" without one).
func (m *Member) APIAddr() string {
	if m.API == nil {
		return ""
	}
	return m.API.Addr()
}

// Stop leaves the cluster and stops everything. Mounts and attachments
// stay; the other members take this member's actors over.
func (m *Member) Stop() error {
	if m.stopped {
		return nil
	}
	m.stopped = true
	if m.Store != nil {
		m.Log.WithField("requests", m.Store.Requests()).Info("store requests since start")
	}
	var errs []error
	if m.API != nil {
		errs = append(errs, m.API.Stop())
	}
	errs = append(errs, m.stopDebug())
	if m.Controller != nil {
		errs = append(errs, m.Controller.Stop(5*time.Second)) // crash only: a short grace loses nothing
	}
	if m.Cluster != nil {
		// Leaving revokes the lease within 3 s (membership.Shutdown), but
		// Proto.Actor's shutdown has more steps without deadlines: a
		// shutdown that hangs is abandoned after shutdownGrace (the lease
		// lapses on its own once this process is gone).
		done := make(chan struct{})
		go func() {
			m.Cluster.Shutdown(true)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(shutdownGrace):
			m.Log.Warnf("leaving the cluster did not finish within %v (is etcd down?): stopping anyway", shutdownGrace)
			errs = append(errs, fmt.Errorf("controller: leaving the cluster: not done within %v", shutdownGrace))
		}
	} else if m.System != nil {
		m.System.Shutdown()
	}
	if m.CSI != nil {
		errs = append(errs, m.CSI.Close())
	}
	if m.Cloud != nil {
		errs = append(errs, m.Cloud.Close())
	}
	closeEvents(m.evw, m.Log) // before the store's connection closes
	if m.Store != nil {
		errs = append(errs, m.Store.Close())
	}
	errs = append(errs, m.journal.Close())
	return errors.Join(errs...)
}

// shutdownGrace bounds the wait for leaving the cluster in Stop (a
// graceful shutdown itself waits about 2 s for ownership to move).
const shutdownGrace = 15 * time.Second

// Backoff shortens retry curves (tether chaos --distributed runs members
// and agents with short ones): a field left 0 keeps the curve's own.
type Backoff struct {
	Initial, Max time.Duration
}

func (b Backoff) apply(p *backoff.Policy) {
	if b.Initial > 0 {
		p.Initial = b.Initial
	}
	if b.Max > 0 {
		p.Max = b.Max
	}
}

// newCluster builds tether's cluster on sys, with membership on etcd
// under prefix (see membership; ttl is a member's lease, lost hears when
// it lapsed); kinds are the actor kinds this process hosts (none for a
// client).
func newCluster(sys *actor.ActorSystem, endpoints []string, etcdTLS *tls.Config, prefix string, rc *remote.Config, kinds []*cluster.Kind, ttl time.Duration, log *logrus.Logger, lost func(error)) (*cluster.Cluster, error) {
	p, err := newMembership(endpoints, prefix+"cluster/"+ClusterName+"/", ttl, log, lost)
	if err != nil {
		return nil, err
	}
	p.tls = etcdTLS
	cfg := cluster.Configure(ClusterName, p, disthash.New(), rc, cluster.WithKinds(kinds...))
	return cluster.New(sys, cfg), nil
}

// startCluster joins cl as a member, or as a client (hosting no kinds).
// Proto.Actor panics when remote or the provider fails to start: that
// becomes an error.
func startCluster(cl *cluster.Cluster, client bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("cluster: joining: %w", e) // ErrPeersUnreachable stays one
			} else {
				err = fmt.Errorf("cluster: joining: %v", r)
			}
		}
	}()
	if client {
		cl.StartClient()
	} else {
		cl.StartMember()
	}
	return nil
}
