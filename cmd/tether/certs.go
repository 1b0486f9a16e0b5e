package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether/tether/bootstrap/operator/certs"
)

// maxCertDays bounds --days: ten years, beyond which a forgotten test CA
// becomes a liability.
const maxCertDays = 3650

func certsCommand() *cobra.Command {
	var (
		out       string
		hosts     []string
		days      int
		force     bool
		processes []string
	)
	cmd := &cobra.Command{
		Use:   "certs --out DIR",
		Short: "Make a local CA and a server and a client certificate signed by it (for --tls-cert, --tls-ca, mutual TLS)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageError{errors.New("certs needs --out DIR")}
			}
			if days < 1 || days > maxCertDays {
				return usageError{fmt.Errorf("--days %d: want 1 to %d", days, maxCertDays)}
			}
			opts := certs.SetOptions{Hosts: hosts, ValidFor: time.Duration(days) * 24 * time.Hour, Now: time.Now(), Force: force}
			if len(processes) > 0 {
				return writeProcessCerts(cmd, out, processes, opts)
			}
			written, err := certs.WriteSet(out, opts)
			switch {
			case errors.Is(err, certs.ErrNoHosts):
				return usageError{fmt.Errorf("--hosts: %w", err)}
			case errors.Is(err, certs.ErrExists):
				return fmt.Errorf("%w (pass --force to replace them)", err)
			case err != nil:
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "wrote %s\n", strings.Join(written, ", "))
			fmt.Fprintf(w, "the server certificate holds %s, valid %d days\n", strings.Join(hosts, ", "), days)
			fmt.Fprintf(w, "  serve    tether up --tls-cert %s/%s --tls-key %s/%s [--tls-client-ca %s/%s]\n", out, certs.ServerFile, out, certs.ServerKeyFile, out, certs.CAFile)
			fmt.Fprintf(w, "  call     tether get nodes --addr tls://HOST:7070 --tls-ca %s/%s [--tls-client-cert %s/%s --tls-client-key %s/%s]\n", out, certs.CAFile, out, certs.ClientFile, out, certs.ClientKeyFile)
			fmt.Fprintf(w, "keep %s/%s secret: whoever holds it can make certificates this CA vouches for\n", out, certs.CAKeyFile)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "directory to write ca.pem, ca-key.pem, server.pem, server-key.pem, client.pem, client-key.pem to (created 0700 if missing)")
	f.StringSliceVar(&hosts, "hosts", defaultCertHosts(), "names and IP addresses the server certificate holds (those clients dial)")
	f.IntVar(&days, "days", 365, "how many days the certificates are valid (1 to 3650)")
	f.BoolVar(&force, "force", false, "replace existing files")
	f.StringSliceVar(&processes, "process", nil, "issue a certificate for each named process of distributed mode (NAME.pem, NAME-key.pem; server and client use, for --hosts), signed by the CA in --out (made first if missing)")
	return cmd
}

// writeProcessCerts issues per-process certificates, making the CA set
// first when --out has none.
func writeProcessCerts(cmd *cobra.Command, out string, names []string, opts certs.SetOptions) error {
	var written []string
	if _, err := os.Stat(filepath.Join(out, certs.CAFile)); errors.Is(err, os.ErrNotExist) {
		w, err := certs.WriteSet(out, certs.SetOptions{Hosts: opts.Hosts, ValidFor: opts.ValidFor, Now: opts.Now})
		if err != nil {
			return err
		}
		written = append(written, w...)
	}
	w, err := certs.WriteProcesses(out, names, opts)
	switch {
	case errors.Is(err, certs.ErrProcessName), errors.Is(err, certs.ErrNoHosts):
		return usageError{fmt.Errorf("--process: %w", err)}
	case errors.Is(err, certs.ErrExists):
		return fmt.Errorf("%w (pass --force to replace them)", err)
	case err != nil:
		return err
	}
	written = append(written, w...)
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", strings.Join(written, ", "))
	c, k := certs.ProcessFiles(out, names[0])
	fmt.Fprintf(cmd.OutOrStdout(), "  e.g.  tether controller --remote-tls-cert %s --remote-tls-key %s --remote-tls-ca %s/%s ...\n", c, k, out, certs.CAFile)
	return nil
}

// defaultCertHosts are loopback's names and this machine's host name, so
// that the certificate serves local clients and, with --allow-remote,
// those that dial the machine by name.
func defaultCertHosts() []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		hosts = append(hosts, h)
	}
	return hosts
}
