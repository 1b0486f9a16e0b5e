package distributed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tether/tether/bootstrap/operator/certs"
)

// A fleet over remote mutual TLS (FleetConfig.RemoteTLS), and the members
// that break it: started without the remote TLS flags, or with a
// certificate of another CA. Such a member reaches etcd and the cloud like
// any other, but no peer can complete a handshake with it: the join gate
// (peers.go) must keep it out of the placement.

// Misconfig is how a misconfigured member breaks the fleet's remote TLS.
type Misconfig int

const (
	// NoRemoteTLS: the member runs without --remote-tls-*: it speaks
	// plain text to peers that only speak mutual TLS.
	NoRemoteTLS Misconfig = iota + 1
	// ForeignCA: the member's certificate, and the CA it trusts, are
	// another CA's: each side refuses the other's certificate.
	ForeignCA
)

func (m Misconfig) String() string {
	switch m {
	case NoRemoteTLS:
		return "no-remote-tls"
	case ForeignCA:
		return "foreign-ca"
	}
	return fmt.Sprintf("Misconfig(%d)", int(m))
}

// foreignCertsDir holds the other CA a ForeignCA member's certificate
// comes from.
func (f *Fleet) foreignCertsDir() string { return filepath.Join(f.cfg.Dir, "certs-foreign") }

// certOptions are the options of every certificate of a fleet: loopback
// only, valid a day.
func certOptions() certs.SetOptions {
	return certs.SetOptions{Hosts: []string{"127.0.0.1", "localhost"}, ValidFor: 24 * time.Hour, Now: time.Now()}
}

// ensureCA makes the CA set in dir unless it is there already, and
// returns the options to issue its certificates with.
func (f *Fleet) ensureCA(dir string) (certs.SetOptions, error) {
	o := certOptions()
	if _, err := os.Stat(filepath.Join(dir, certs.CAFile)); err == nil {
		return o, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return o, err
	}
	_, err := certs.WriteSet(dir, o)
	return o, err
}

// processTLSArgs are the --remote-tls-* flags of process name, with a
// certificate of the CA in dir issued for it if it has none yet (a
// process started again keeps its certificate).
func (f *Fleet) processTLSArgs(dir, name string) ([]string, error) {
	o, err := f.ensureCA(dir)
	if err != nil {
		return nil, err
	}
	cert, key := certs.ProcessFiles(dir, name)
	if _, err := os.Stat(cert); errors.Is(err, fs.ErrNotExist) {
		if _, err := certs.WriteProcesses(dir, []string{name}, o); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return []string{"--remote-tls-cert", cert, "--remote-tls-key", key, "--remote-tls-ca", filepath.Join(dir, certs.CAFile)}, nil
}

// remoteTLSArgs are process name's --remote-tls-* flags (RemoteTLS).
func (f *Fleet) remoteTLSArgs(name string) ([]string, error) {
	return f.processTLSArgs(f.certsDir(), "remote-"+name)
}

// StartMisconfiguredController starts one more controller member, of the
// same etcd and cloud as the others, misconfigured as kind says about
// remote TLS (FleetConfig.RemoteTLS must be set), with --join-timeout
// join and no API. It does not wait for the member to be ready: it never
// should be. It returns the member's index: ControllerExit,
// ControllerRunning, ControllerJournal and ControllerLog take it; the
// fleet's Stop stops it if it still runs. Its journal is written even
// without FleetConfig.Chaos, so that what it did can be judged.
func (f *Fleet) StartMisconfiguredController(kind Misconfig, join time.Duration) (int, error) {
	if !f.cfg.RemoteTLS {
		return 0, errors.New("fleet: a misconfigured member needs a fleet over remote TLS (FleetConfig.RemoteTLS)")
	}
	if join <= 0 {
		return 0, errors.New("fleet: a misconfigured member needs a join bound")
	}
	p, err := newProxy("127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	i := len(f.members)
	m := &member{proxy: p, name: fmt.Sprintf("misconfigured-%d", i)}
	f.members = append(f.members, m)
	f.mu.Unlock()
	real, err := freeAddr()
	if err != nil {
		return i, err
	}
	args := append(f.common(), "--remote-addr", real, "--remote-advertise", p.addr(), "--api-addr", "", "--join-timeout", join.String())
	if f.cfg.SyncPeriod > 0 {
		args = append(args, "--sync-period", f.cfg.SyncPeriod.String())
	}
	switch kind {
	case NoRemoteTLS:
	case ForeignCA:
		tlsArgs, err := f.processTLSArgs(f.foreignCertsDir(), m.name)
		if err != nil {
			return i, err
		}
		args = append(args, tlsArgs...)
	default:
		return i, fmt.Errorf("fleet: unknown misconfiguration %v", kind)
	}
	if !f.cfg.Chaos {
		journal := filepath.Join(f.cfg.Dir, "journals", m.name+".1.jsonl")
		args = append(args, "--journal", journal)
		f.mu.Lock()
		f.journals[m.name] = journal
		f.mu.Unlock()
	}
	p.retarget(real)
	pr, err := f.start(m.name, append([]string{"controller"}, args...), "")
	if err != nil {
		return i, err
	}
	f.mu.Lock()
	m.proc = pr
	f.mu.Unlock()
	return i, nil
}

// ControllerJournal is the journal of member i's latest process ("" if
// it has none).
func (f *Fleet) ControllerJournal(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.journals[f.members[i].name]
}

// ControllerLog is the log file of member i's processes.
func (f *Fleet) ControllerLog(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logPath(f.members[i].name)
}

// Controllers is how many member slots the fleet has: its configured
// members, then the misconfigured ones started since.
func (f *Fleet) Controllers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.members)
}
