package store

import (
	"crypto/rand"
	"encoding/hex"
)

// ObjectUID names one incarnation of an object (volume, node, workload),
// where a name may be reused: a Put that creates the object assigns a new
// one, a Put that replaces it keeps it (whatever the caller set), and a
// delete followed by a create gives a different one. What belongs to an
// object rather than to its name (its events, the status an actor reports)
// is tagged with it. UIDs are 128 random bits in hex, never reused.
//
// Bolt files written before UIDs existed get one for every object when
// OpenBolt opens them (see assignMissingUIDs).
func newObjectUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// keepUID returns old's UID if the object existed, else a new one.
func keepUID(old string, existed bool) string {
	if existed && old != "" {
		return old
	}
	return newObjectUID()
}
