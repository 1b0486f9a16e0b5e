package volume

import "slices"

// attachments holds a volume's attachments, one per node, sorted by node.
// A volume has one or two; a fleet has 100,000 volumes. A sorted slice of
// one entry costs 24 bytes where a map costs about 250, and it lists its
// nodes in order without sorting them.
type attachments []nodeAttachment

type nodeAttachment struct {
	node NodeName
	a    *Attachment
}

func (s attachments) find(n NodeName) (int, bool) {
	return slices.BinarySearchFunc(s, n, func(e nodeAttachment, n NodeName) int {
		switch {
		case e.node < n:
			return -1
		case e.node > n:
			return 1
		}
		return 0
	})
}

// get returns n's attachment, or nil.
func (s attachments) get(n NodeName) *Attachment {
	if i, ok := s.find(n); ok {
		return s[i].a
	}
	return nil
}

// put sets n's attachment.
func (s *attachments) put(n NodeName, a *Attachment) {
	i, ok := s.find(n)
	if ok {
		(*s)[i].a = a
		return
	}
	*s = slices.Insert(*s, i, nodeAttachment{node: n, a: a})
}

// remove deletes n's attachment, if any; the last one leaves nothing
// allocated.
func (s *attachments) remove(n NodeName) {
	if i, ok := s.find(n); ok {
		*s = slices.Delete(*s, i, i+1)
	}
	if len(*s) == 0 {
		*s = nil
	}
}

// nodes lists the nodes, in order, in a new slice: callers may change the
// attachments while they walk it.
func (s attachments) nodes() []NodeName {
	out := make([]NodeName, len(s))
	for i, e := range s {
		out[i] = e.node
	}
	return out
}
