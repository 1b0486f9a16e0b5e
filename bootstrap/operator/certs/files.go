package certs

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether/tether/cloud/files/durable"
)

// The files WriteSet makes in its directory.
const (
	CAFile        = "ca.pem"
	CAKeyFile     = "ca-key.pem"
	ServerFile    = "server.pem"
	ServerKeyFile = "server-key.pem"
	ClientFile    = "client.pem"
	ClientKeyFile = "client-key.pem"
)

// ErrExists is returned by WriteSet when a file it would write is there
// already and Force is not set.
var ErrExists = errors.New("certs: refusing to overwrite existing files")

// SetOptions configures WriteSet.
type SetOptions struct {
	// Hosts are the server certificate's names and IP addresses.
	Hosts []string
	// ValidFor bounds every certificate of the set.
	ValidFor time.Duration
	// Now is when the certificates start to be valid (less an hour).
	Now time.Time
	// Force replaces existing files.
	Force bool
}

// WriteSet makes a CA and a server and a client certificate signed by it,
// and writes them to dir (created with mode 0700 if missing) as the six
// files named above: certificates mode 0644, keys 0600. Without Force it
// refuses, before writing anything, if any of them exists, and a file that
// appears meanwhile is never replaced. It returns the paths written.
func WriteSet(dir string, o SetOptions) ([]string, error) {
	names := []string{CAFile, CAKeyFile, ServerFile, ServerKeyFile, ClientFile, ClientKeyFile}
	if !o.Force {
		var there []string
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
				there = append(there, filepath.Join(dir, n))
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		if len(there) > 0 {
			return nil, fmt.Errorf("%w: %s", ErrExists, strings.Join(there, ", "))
		}
	}
	ca, err := NewCA("tether local CA", o.Now, o.ValidFor)
	if err != nil {
		return nil, err
	}
	srv, err := ca.Issue(Server, "tether server", o.Hosts, o.Now, o.ValidFor)
	if err != nil {
		return nil, err
	}
	cli, err := ca.Issue(Client, "tether client", nil, o.Now, o.ValidFor)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var written []string
	for i, p := range []*Pair{ca, srv, cli} {
		key, err := p.KeyPEM()
		if err != nil {
			return written, err
		}
		for _, f := range []struct {
			name string
			data []byte
			mode os.FileMode
		}{{names[2*i], p.CertPEM(), 0o644}, {names[2*i+1], key, 0o600}} {
			path := filepath.Join(dir, f.name)
			if err := WriteFile(path, f.data, f.mode, o.Force); err != nil {
				return written, err
			}
			written = append(written, path)
		}
	}
	return written, nil
}

// ProcessFiles names the certificate and key files of process name in a
// set's directory: "<name>.pem" and "<name>-key.pem".
func ProcessFiles(dir, name string) (cert, key string) {
	return filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
}

// ErrProcessName: a process name that cannot be a file name of its own.
var ErrProcessName = errors.New("certs: invalid process name")

// reservedNames are the set's own files; no process may take them.
var reservedNames = map[string]bool{"ca": true, "server": true, "client": true}

// WriteProcesses issues a peer certificate (server and client use, for
// hosts) for each process name, signed by the CA of the set in dir (made
// by WriteSet), and writes it as ProcessFiles says. Names are checked
// before anything is read or written: letters, digits, '-', '_' and '.',
// not starting with '.', at most 64 bytes, none of the set's own names.
// Without Force it refuses, before writing anything, if a file exists.
func WriteProcesses(dir string, names []string, o SetOptions) ([]string, error) {
	for _, n := range names {
		if err := checkProcessName(n); err != nil {
			return nil, err
		}
	}
	var files []string
	for _, n := range names {
		c, k := ProcessFiles(dir, n)
		files = append(files, c, k)
	}
	if !o.Force {
		var there []string
		for _, f := range files {
			if _, err := os.Lstat(f); err == nil {
				there = append(there, f)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		if len(there) > 0 {
			return nil, fmt.Errorf("%w: %s", ErrExists, strings.Join(there, ", "))
		}
	}
	ca, err := LoadCA(filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, err
	}
	var written []string
	for _, n := range names {
		p, err := ca.Issue(Peer, "tether "+n, o.Hosts, o.Now, o.ValidFor)
		if err != nil {
			return written, err
		}
		key, err := p.KeyPEM()
		if err != nil {
			return written, err
		}
		c, k := ProcessFiles(dir, n)
		if err := WriteFile(c, p.CertPEM(), 0o644, o.Force); err != nil {
			return written, err
		}
		written = append(written, c)
		if err := WriteFile(k, key, 0o600, o.Force); err != nil {
			return written, err
		}
		written = append(written, k)
	}
	return written, nil
}

func checkProcessName(n string) error {
	if n == "" || len(n) > 64 || n[0] == '.' || reservedNames[n] {
		return fmt.Errorf("%w: %q", ErrProcessName, n)
	}
	for _, r := range n {
		ok := r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return fmt.Errorf("%w: %q (letters, digits, '-', '_' and '.' only)", ErrProcessName, n)
		}
	}
	return nil
}

// LoadCA reads a CA's certificate and key (PEM, as WriteSet writes them).
func LoadCA(certFile, keyFile string) (*Pair, error) {
	tc, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certs: loading the CA %s and %s (tether certs --out DIR makes them): %w", certFile, keyFile, err)
	}
	cert, err := x509.ParseCertificate(tc.Certificate[0])
	if err != nil {
		return nil, err
	}
	key, ok := tc.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || !cert.IsCA {
		return nil, fmt.Errorf("certs: %s is not a CA made by tether certs", certFile)
	}
	return &Pair{Cert: cert, Key: key}, nil
}

// WriteFile writes data to path durably (cloud/files/durable): path
// holds the old content or the new, never a part. With replace it
// replaces what is there; without, it refuses (matching ErrExists) a
// path that exists, even one that appears meanwhile, and
// leaves it as it was.
func WriteFile(path string, data []byte, mode os.FileMode, replace bool) error {
	if replace {
		return durable.WriteFile(path, data, mode)
	}
	if err := durable.Create(path, data, mode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, path)
		}
		return err
	}
	return nil
}
