package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// TestEtcdFencedWritesShareTransactions: many actors' fenced writes at
// once share transactions, and sharing changes no answer: a write whose
// fence moved is refused (ErrFenced) while the others of its group land,
// and a status written from a stale read still lands (read again).
func TestEtcdFencedWritesShareTransactions(t *testing.T) {
	for _, cache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			srv := sharedEtcd(t)
			prefix := freshPrefix()
			s := openEtcd(t, srv, EtcdConfig{Prefix: prefix, Cache: cache})
			other := openEtcd(t, srv, EtcdConfig{Prefix: prefix})
			const n = 64
			epochs := make([]uint64, n)
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					epochs[i], errs[i] = s.Claim(VolumeOwner(vol(i)))
				}()
			}
			wg.Wait()
			must(t, errors.Join(errs...))
			// Every tenth volume is claimed again elsewhere: its writes
			// with the first epoch must be refused.
			for i := 0; i < n; i += 10 {
				_, err := other.Claim(VolumeOwner(vol(i)))
				must(t, err)
			}
			// A status another client wrote: s's cached copy, if any,
			// may be stale for the first attempt.
			must(t, other.PutNodeStatus(nodestatus.Status{Name: "n0", VolumesAttached: map[cloud.VolumeID]string{"x": "/dev/x"}}))
			before := s.Requests()[ReqTxnWrite]
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.PutIntent(Intent{Volume: vol(i), Node: "n1", Op: uint64(i), Attach: true, Epoch: epochs[i]})
				}()
			}
			stErrs := make([]error, 4)
			for j := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stErrs[j] = (s.PutNodeStatus(nodestatus.Status{Name: cloud.NodeName(fmt.Sprintf("n%d", j)), Ready: true}))
				}()
			}
			wg.Wait()
			must(t, errors.Join(stErrs...))
			for i := range n {
				ins, err := other.Intents(vol(i))
				must(t, err)
				if i%10 == 0 {
					if !errors.Is(errs[i], ErrFenced) || len(ins) != 0 {
						t.Fatalf("volume %d, claimed again: PutIntent = %v, intents %+v; want ErrFenced and none", i, errs[i], ins)
					}
					continue
				}
				if errs[i] != nil || len(ins) != 1 || ins[0].Op != uint64(i) {
					t.Fatalf("volume %d: PutIntent = %v, intents %+v; want op %d", i, errs[i], ins, i)
				}
			}
			for j := range 4 {
				st, ok, err := other.NodeStatus(cloud.NodeName(fmt.Sprintf("n%d", j)))
				if err != nil || !ok || !st.Ready || len(st.VolumesAttached) != 0 {
					t.Fatalf("status of n%d = %+v, %v, %v; want ready and nothing attached", j, st, ok, err)
				}
			}
			txns, writes := s.Grouped()
			t.Logf("%d writes in %d write transactions; %d of them in %d shared ones", n+4, s.Requests()[ReqTxnWrite]-before, writes, txns)
			if txns == 0 || writes < 2*txns || s.Requests()[ReqTxnWrite]-before >= n {
				t.Fatalf("%d shared transactions of %d writes: %d concurrent writes never shared one", txns, writes, n+4)
			}
		})
	}
}

func vol(i int) cloud.VolumeID { return cloud.VolumeID(fmt.Sprintf("v%03d", i)) }
