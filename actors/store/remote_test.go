package store

import "testing"

// Only etcd's reads are round trips (RemoteReads): the controller reads
// whole tables per batch there, and each named object elsewhere.
func TestRemoteReads(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Store
		want bool
	}{
		{"memory", NewMemory(), false},
		{"bolt", &Bolt{}, false},
		{"etcd", &Etcd{}, true},
	} {
		if got := RemoteReads(tc.s); got != tc.want {
			t.Errorf("RemoteReads(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
