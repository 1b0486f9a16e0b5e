package cloud

import "fmt"

// Listing is how far a Provider's answers about attachments
// (VolumesAreAttached, InstanceVolumes) may be believed. The controller
// reads a provider's word only as far as its contract promises it; where
// the provider promises nothing, tether's own durable records (intents,
// node statuses) are the truth, as Kubernetes' CSI attacher answers
// "is it attached?" from its VolumeAttachment records.
type Listing int

const (
	// ListingExact: the listing is the truth both ways. An attachment
	// missing from it is gone (healed by attaching again); one listed that
	// nobody wants is dangling (detached). The sim and loop clouds.
	ListingExact Listing = iota
	// ListingMayOverstate: an attachment missing from the listing is gone,
	// but a listed one may not be real. CSI's published_node_ids "MAY
	// include nodes not published to or reported by the SP. The CO MUST be
	// resilient to that": an extra listed node is reported, never by
	// itself a reason to detach. A CSI driver with
	// LIST_VOLUMES_PUBLISHED_NODES.
	ListingMayOverstate
	// ListingNone: the provider cannot say what is attached (a CSI driver
	// without LIST_VOLUMES_PUBLISHED_NODES, whose published_node_ids the
	// CO "MUST not interpret"). Nothing is verified against it: tether's
	// records are the truth, an operation whose outcome is unknown is
	// settled by repeating it (attach or detach, both idempotent), and
	// VolumesAreAttached and InstanceVolumes fail (ErrTerminal) without
	// asking anything.
	ListingNone
)

func (l Listing) String() string {
	switch l {
	case ListingExact:
		return "exact"
	case ListingMayOverstate:
		return "may-overstate"
	case ListingNone:
		return "none"
	}
	return fmt.Sprintf("Listing(%d)", int(l))
}

// Verifies reports whether the listing can reveal an attachment that went
// missing (ListingExact, ListingMayOverstate).
func (l Listing) Verifies() bool { return l == ListingExact || l == ListingMayOverstate }

// Lister is implemented by a Provider whose listing is not exact.
type Lister interface{ Listing() Listing }

// ListingOf is p's Listing: ListingExact unless p says otherwise.
func ListingOf(p Provider) Listing {
	if l, ok := p.(Lister); ok {
		return l.Listing()
	}
	return ListingExact
}
