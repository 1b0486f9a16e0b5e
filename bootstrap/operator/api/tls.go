package api

import (
	"crypto/tls"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/cloud"
)

// ErrPlainRemote is returned for a non-loopback address without TLS: the
// bearer token must never cross a network in plain text.
var ErrPlainRemote = errors.New("api: refusing to serve beyond loopback without TLS")

// ServeTLS is Serve over TLS with tlsCfg (plain text when nil, which only
// a loopback addr allows). A non-loopback addr needs both allowRemote and
// tlsCfg; both checks happen before listening. Client certificates are
// checked as tlsCfg says (ClientAuth, ClientCAs); the bearer token is
// checked on every call in any case.
func ServeTLS(addr, token string, ctl *controller.Controller, nodes cloud.Provisioner, allowRemote bool, tlsCfg *tls.Config) (*Server, error) {
	if tlsCfg == nil {
		if err := checkLoopback(addr); err != nil && allowRemote {
			return nil, fmt.Errorf("%w: %q", ErrPlainRemote, addr)
		}
		return serve(addr, token, &service{ctl: ctl, nodes: nodes}, allowRemote)
	}
	if len(tlsCfg.Certificates) == 0 && tlsCfg.GetCertificate == nil {
		return nil, errors.New("api: TLS configuration without a certificate")
	}
	return serve(addr, token, &service{ctl: ctl, nodes: nodes}, allowRemote, grpc.Creds(credentials.NewTLS(tlsCfg)))
}
