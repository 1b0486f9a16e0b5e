package certs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A process certificate serves both ends of mutual TLS: two members, each
// with its own, handshake both ways; a process certificate of another CA
// is refused.
func TestProcessCertificatesServeBothEnds(t *testing.T) {
	dir := writeSet(t, "127.0.0.1")
	other := writeSet(t, "127.0.0.1")
	o := SetOptions{Hosts: []string{"127.0.0.1", "localhost"}, ValidFor: 30 * day, Now: time.Now()}
	if _, err := WriteProcesses(dir, []string{"controller-1", "agent-n1"}, o); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteProcesses(other, []string{"intruder"}, o); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, CAFile)
	c1, k1 := ProcessFiles(dir, "controller-1")
	c2, k2 := ProcessFiles(dir, "agent-n1")
	ci, ki := ProcessFiles(other, "intruder")
	for _, tc := range []struct {
		name                   string
		srvCert, srvKey        string
		cliCert, cliKey        string
		wantServer, wantClient bool
	}{
		{"controller serves the agent", c1, k1, c2, k2, true, true},
		{"agent serves the controller", c2, k2, c1, k1, true, true},
		{"a process of another CA is refused", c1, k1, ci, ki, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := ServerConfig(tc.srvCert, tc.srvKey, ca)
			if err != nil {
				t.Fatal(err)
			}
			cli, err := ClientConfig(ca, tc.cliCert, tc.cliKey, "127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			srvErr, cliErr := handshake(t, srv, cli)
			if (srvErr == nil) != tc.wantServer || (cliErr == nil) != tc.wantClient {
				t.Fatalf("server error %v, client error %v; want success %v/%v", srvErr, cliErr, tc.wantServer, tc.wantClient)
			}
		})
	}
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestWriteProcessesRefusals(t *testing.T) {
	dir := writeSet(t, "127.0.0.1")
	o := SetOptions{Hosts: []string{"127.0.0.1"}, ValidFor: day, Now: time.Now()}
	for _, name := range []string{"", "../escape", "a/b", ".hidden", "ca", "server", "client", "white space"} {
		if _, err := WriteProcesses(dir, []string{"ok", name}, o); !errors.Is(err, ErrProcessName) {
			t.Errorf("name %q: %v, want ErrProcessName", name, err)
		}
	}
	if c, _ := ProcessFiles(dir, "ok"); fileExists(c) {
		t.Fatal("a refused batch wrote a file")
	}
	if _, err := WriteProcesses(dir, []string{"m1"}, o); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteProcesses(dir, []string{"m1"}, o); !errors.Is(err, ErrExists) {
		t.Fatalf("second write: %v, want ErrExists", err)
	}
	if _, err := WriteProcesses(dir, []string{"m1"}, SetOptions{Hosts: o.Hosts, ValidFor: day, Now: time.Now(), Force: true}); err != nil {
		t.Fatalf("forced: %v", err)
	}
	if _, err := WriteProcesses(t.TempDir(), []string{"m1"}, o); err == nil {
		t.Fatal("issued without a CA")
	}
	if _, err := WriteProcesses(dir, []string{"m2"}, SetOptions{ValidFor: day, Now: time.Now()}); !errors.Is(err, ErrNoHosts) {
		t.Fatalf("no hosts: %v, want ErrNoHosts", err)
	}
}
