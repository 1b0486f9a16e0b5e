package store

import (
	"slices"
	"time"

	"github.com/tether/tether/cloud"
)

// Intent is a cloud operation a volume actor is about to send, recorded
// BEFORE it is sent. A call once sent is carried out whether or not its
// sender still lives, but never after its deadline (cloud.Provider): until
// Deadline the operation may land, so an incarnation rebuilding the volume
// must treat it as in flight. Past Deadline it still says where the volume
// may be attached (the reply may have been lost), until the cloud's truth,
// asked after the deadline, tells. Intents are replaced, never expired: the
// journal lists every node an attach or detach of the volume was sent to.
// When the reply of an operation reaches its sender, the sender replaces
// the intent with one whose Deadline is that moment: the operation can no
// longer land after it.
type Intent struct {
	Volume   cloud.VolumeID
	Node     cloud.NodeName
	Op       uint64 // the sender's operation number
	Attach   bool   // an attach; false: a detach
	Deadline time.Time
	// Epoch fences the write: PutIntent succeeds only if it is the latest
	// claim of VolumeOwner(Volume) (see Fences); 0 is unfenced. It is
	// kept with the intent and read back as written.
	Epoch uint64
}

// Intents is the journal of operations in flight, kept by every Store. It
// is a separate interface so that the controller's actors can depend on
// exactly what they need.
type Intents interface {
	// PutIntent records it durably; it replaces the intent of the same
	// volume and node. The caller sends the operation only after
	// PutIntent returned nil. An intent whose Epoch is not 0 and not the
	// latest claim of VolumeOwner(Volume) is refused, nothing written,
	// with an error wrapping ErrFenced; the check is atomic with the
	// write.
	PutIntent(Intent) error
	// Intents lists the intents of vol recorded and not yet replaced,
	// sorted by node; expired ones may be among them.
	Intents(vol cloud.VolumeID) ([]Intent, error)
}

// intentKey is an intent's key: volume and node, which are valid names and
// so never contain a NUL byte.
func intentKey(vol cloud.VolumeID, node cloud.NodeName) string {
	return string(vol) + "\x00" + string(node)
}

func sortIntents(out []Intent) []Intent {
	slices.SortFunc(out, func(a, b Intent) int {
		switch {
		case a.Node < b.Node:
			return -1
		case a.Node > b.Node:
			return 1
		}
		return 0
	})
	return out
}
