package remoting

import (
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Why an envelope is dropped.
const (
	reasonEnvelope   = "malformed envelope"  // an index out of range, a missing target
	reasonSerializer = "unknown serializer"  // only proto (ID 0) is sent by this Proto.Actor
	reasonUnknown    = "unknown type"        // not linked into this binary
	reasonRefused    = "type not accepted"   // linked, but outside Config.Accept
	reasonMalformed  = "bytes do not decode" // as the type they claim
	reasonSystem     = "incomplete system message"
)

// protoSerializerID is the index of Proto.Actor's proto serializer, the
// first it registers and the only one its endpoint writer uses.
const protoSerializerID = 0

// rejection is one dropped envelope.
type rejection struct {
	typeName string
	reason   string
	err      error // the decoding error, if any
	sender   *actor.PID
	target   *actor.PID
}

// screen decides which envelopes of a batch reach the endpoint reader.
// Its decisions depend on the batch, its packages and the binary's
// protobuf registry only.
type screen struct {
	prefixes []string // accepted packages, each with a trailing dot; nil: any
}

func newScreen(packages []string) screen {
	var s screen
	for _, p := range packages {
		s.prefixes = append(s.prefixes, strings.TrimSuffix(p, ".")+".")
	}
	return s
}

// batch drops from b, in place, every envelope the endpoint reader must
// not see, and returns them in order. Every other envelope is kept, in
// order, and is safe for Proto.Actor to deserialize and deliver.
func (s screen) batch(b *remote.MessageBatch) []rejection {
	var out []rejection
	kept := b.Envelopes[:0]
	for _, e := range b.Envelopes {
		if r := s.envelope(b, e); r != nil {
			out = append(out, *r)
			continue
		}
		kept = append(kept, e)
	}
	clear(b.Envelopes[len(kept):])
	b.Envelopes = kept
	return out
}

func (s screen) envelope(b *remote.MessageBatch, e *remote.MessageEnvelope) *rejection {
	if e == nil {
		return &rejection{reason: reasonEnvelope}
	}
	r := &rejection{}
	if i := e.Sender; i > 0 && int(i) <= len(b.Senders) {
		r.sender = b.Senders[i-1]
	}
	if i := e.Target; i >= 0 && int(i) < len(b.Targets) {
		r.target = b.Targets[i]
	}
	if i := e.TypeId; i >= 0 && int(i) < len(b.TypeNames) {
		r.typeName = b.TypeNames[i]
	}
	switch {
	case r.target == nil || e.Sender < 0 || int(e.Sender) > len(b.Senders) || e.TypeId < 0 || int(e.TypeId) >= len(b.TypeNames):
		r.reason = reasonEnvelope
		return r
	case e.SerializerId != protoSerializerID:
		r.reason = reasonSerializer
		return r
	}
	m, reason, err := s.decode(r.typeName, e.MessageData)
	if reason == "" {
		reason, err = s.complete(m)
	}
	if reason == "" {
		return nil
	}
	r.reason, r.err = reason, err
	return r
}

// decode decodes data as the type named, if it is accepted and known.
func (s screen) decode(name string, data []byte) (proto.Message, string, error) {
	if !s.accepts(name) {
		return nil, reasonRefused, nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		return nil, reasonUnknown, nil
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(data, m); err != nil {
		return nil, reasonMalformed, err
	}
	return m, "", nil
}

func (s screen) accepts(name string) bool {
	if s.prefixes == nil {
		return true
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// complete checks the fields Proto.Actor dereferences without looking
// (a Terminated without Who panics the endpoint manager) and the nested
// envelopes of the cluster's pub-sub batches, which Proto.Actor
// deserializes as it does root messages, panics included.
func (s screen) complete(m proto.Message) (string, error) {
	switch m := m.(type) {
	case *actor.Terminated:
		if m.Who == nil {
			return reasonSystem, nil
		}
	case *actor.Watch:
		if m.Watcher == nil {
			return reasonSystem, nil
		}
	case *actor.Unwatch:
		if m.Watcher == nil {
			return reasonSystem, nil
		}
	case *cluster.PubSubBatchTransport:
		return s.nested(m.TypeNames, m.Envelopes)
	case *cluster.PubSubAutoRespondBatchTransport:
		return s.nested(m.TypeNames, m.Envelopes)
	case *cluster.DeliverBatchRequestTransport:
		if m.Batch == nil {
			return reasonSystem, nil
		}
		return s.nested(m.Batch.TypeNames, m.Batch.Envelopes)
	}
	return "", nil
}

// nested screens a pub-sub batch: one bad envelope refuses the batch,
// which Proto.Actor delivers whole or not at all. Its messages reach
// subscribers as they are, so decoding them is the whole check.
func (s screen) nested(names []string, envs []*cluster.PubSubEnvelope) (string, error) {
	for _, e := range envs {
		switch {
		case e == nil || e.TypeId < 0 || int(e.TypeId) >= len(names):
			return reasonEnvelope, nil
		case e.SerializerId != protoSerializerID:
			return reasonSerializer, nil
		}
		if _, reason, err := s.decode(names[e.TypeId], e.MessageData); reason != "" {
			return reason, fmt.Errorf("in the batch, %.200s: %s", names[e.TypeId], errOr(err, reason))
		}
	}
	return "", nil
}

func errOr(err error, reason string) string {
	if err != nil {
		return err.Error()
	}
	return reason
}
