package distributed

import (
	"strings"
	"testing"
)

// Endpoints become URLs; plain text goes to loopback only; TLS needs all
// three files and makes every endpoint https.
func TestEtcdClientEndpoints(t *testing.T) {
	for _, tc := range []struct {
		eps     []string
		tls     EtcdTLS
		want    string // joined URLs, or the error's words
		refused bool
	}{
		{eps: []string{"127.0.0.1:2379"}, want: "http://127.0.0.1:2379"},
		{eps: []string{"http://localhost:2379", "[::1]:2379"}, want: "http://localhost:2379,http://[::1]:2379"},
		{eps: []string{"10.1.2.3:2379"}, want: "is not on this machine", refused: true},
		{eps: []string{"http://etcd.example:2379"}, want: "is not on this machine", refused: true},
		{eps: []string{"https://127.0.0.1:2379"}, want: "https needs --etcd-tls-ca", refused: true},
		{eps: []string{"127.0.0.1:2379"}, tls: EtcdTLS{CA: "ca.pem"}, want: "together", refused: true},
		{eps: []string{"::bad"}, want: "want host:port", refused: true},
	} {
		got, _, err := etcdClient(tc.eps, tc.tls)
		switch {
		case tc.refused && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("etcdClient(%v, %+v) = %v, %v; want refused saying %q", tc.eps, tc.tls, got, err, tc.want)
		case !tc.refused && (err != nil || strings.Join(got, ",") != tc.want):
			t.Errorf("etcdClient(%v) = %v, %v; want %s", tc.eps, got, err, tc.want)
		}
	}
}
