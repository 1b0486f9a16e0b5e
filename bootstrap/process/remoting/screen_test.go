package remoting

import (
	"runtime"
	"slices"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tether/tether/messages"
)

// The reason for the screen: the pinned Proto.Actor's proto serializer
// panics on a type name the registry does not hold (it calls New on the
// nil type FindMessageByName returned), and remote.Deserialize is what its
// endpoint reader calls for every envelope, in the gRPC handler's
// goroutine. Bytes that do not decode are an error, on which the reader
// ends the peer's stream.
func TestProtoActorPanicsOnUnknownType(t *testing.T) {
	var r any
	func() {
		defer func() { r = recover() }()
		_, _ = remote.Deserialize(nil, "tether.messages.NoSuchMessage", protoSerializerID)
	}()
	if _, ok := r.(runtime.Error); !ok {
		t.Fatalf("recovered %v, want a runtime error; if Proto.Actor no longer panics, update the package doc (the screen still enforces Accept)", r)
	}
	if _, err := remote.Deserialize(notUTF8, "tether.messages.Heartbeat", protoSerializerID); err == nil {
		t.Fatal("bytes that do not decode deserialized")
	}
}

// notUTF8 is a Heartbeat whose node (field 1, a string) is not UTF-8.
var notUTF8 = []byte{0x0a, 0x02, 0xff, 0xfe}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestScreen(t *testing.T) {
	hb := marshal(t, &messages.Heartbeat{Node: "n1"})
	pid := actor.NewPID("127.0.0.1:1", "echo")
	nested := func(names []string, envs ...*cluster.PubSubEnvelope) []byte {
		return marshal(t, &cluster.PubSubBatchTransport{TypeNames: names, Envelopes: envs})
	}
	for _, tc := range []struct {
		name   string
		types  []string // the batch's type names
		env    *remote.MessageEnvelope
		any    bool // accept any known type
		reason string
	}{
		{"heartbeat", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb}, false, ""},
		{"with sender", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb, Sender: 1}, false, ""},
		{"nil envelope", nil, nil, false, reasonEnvelope},
		{"type index out of range", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb, TypeId: 1}, false, reasonEnvelope},
		{"negative type index", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb, TypeId: -1}, false, reasonEnvelope},
		{"target index out of range", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb, Target: 2}, false, reasonEnvelope},
		{"nil target", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb, Target: 1}, false, reasonEnvelope},
		{"sender index out of range", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb, Sender: 2}, false, reasonEnvelope},
		{"JSON serializer", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb, SerializerId: 1}, false, reasonSerializer},
		{"unknown serializer", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb, SerializerId: 7}, false, reasonSerializer},
		{"unknown type", []string{"tether.messages.NoSuchMessage"}, &remote.MessageEnvelope{MessageData: hb}, false, reasonUnknown},
		{"unknown type, any accepted", []string{"no.such.Message"}, &remote.MessageEnvelope{}, true, reasonUnknown},
		{"outside the packages", []string{"google.protobuf.StringValue"}, &remote.MessageEnvelope{MessageData: marshal(t, wrapperspb.String("x"))}, false, reasonRefused},
		{"package prefix is not a package", []string{"actorx.Watch"}, &remote.MessageEnvelope{}, false, reasonRefused},
		{"outside the packages, any accepted", []string{"google.protobuf.StringValue"}, &remote.MessageEnvelope{MessageData: marshal(t, wrapperspb.String("x"))}, true, ""},
		{"not UTF-8", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: notUTF8}, false, reasonMalformed},
		{"truncated", []string{"tether.messages.Heartbeat"}, &remote.MessageEnvelope{MessageData: hb[:len(hb)-1]}, false, reasonMalformed},
		{"Terminated", []string{"actor.Terminated"}, &remote.MessageEnvelope{MessageData: marshal(t, &actor.Terminated{Who: pid})}, false, ""},
		{"Terminated without Who", []string{"actor.Terminated"}, &remote.MessageEnvelope{}, false, reasonSystem},
		{"Watch without Watcher", []string{"actor.Watch"}, &remote.MessageEnvelope{}, false, reasonSystem},
		{"Unwatch without Watcher", []string{"actor.Unwatch"}, &remote.MessageEnvelope{}, false, reasonSystem},
		{"Watch", []string{"actor.Watch"}, &remote.MessageEnvelope{MessageData: marshal(t, &actor.Watch{Watcher: pid})}, false, ""},
		{"pub-sub batch", []string{"cluster.PubSubBatchTransport"}, &remote.MessageEnvelope{MessageData: nested([]string{"tether.messages.Heartbeat"}, &cluster.PubSubEnvelope{MessageData: hb})}, false, ""},
		{"pub-sub batch, nested unknown", []string{"cluster.PubSubBatchTransport"}, &remote.MessageEnvelope{MessageData: nested([]string{"tether.messages.Heartbeat", "x.Y"}, &cluster.PubSubEnvelope{MessageData: hb}, &cluster.PubSubEnvelope{TypeId: 1})}, false, reasonRefused},
		{"pub-sub batch, nested index", []string{"cluster.PubSubBatchTransport"}, &remote.MessageEnvelope{MessageData: nested(nil, &cluster.PubSubEnvelope{})}, false, reasonEnvelope},
		{"auto-respond batch, nested malformed", []string{"cluster.PubSubAutoRespondBatchTransport"}, &remote.MessageEnvelope{MessageData: marshal(t, &cluster.PubSubAutoRespondBatchTransport{TypeNames: []string{"tether.messages.Heartbeat"}, Envelopes: []*cluster.PubSubEnvelope{{MessageData: notUTF8}}})}, false, reasonMalformed},
		{"delivery without batch", []string{"cluster.DeliverBatchRequestTransport"}, &remote.MessageEnvelope{}, false, reasonSystem},
		{"delivery, nested serializer", []string{"cluster.DeliverBatchRequestTransport"}, &remote.MessageEnvelope{MessageData: marshal(t, &cluster.DeliverBatchRequestTransport{Batch: &cluster.PubSubBatchTransport{TypeNames: []string{"tether.messages.Heartbeat"}, Envelopes: []*cluster.PubSubEnvelope{{SerializerId: 1}}}})}, false, reasonSerializer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScreen(DefaultAccept())
			if tc.any {
				s = newScreen(nil)
			}
			b := &remote.MessageBatch{TypeNames: tc.types, Targets: []*actor.PID{pid, nil}, Senders: []*actor.PID{pid}, Envelopes: []*remote.MessageEnvelope{tc.env}}
			rs := s.batch(b)
			switch {
			case tc.reason == "" && (len(rs) != 0 || len(b.Envelopes) != 1):
				t.Fatalf("rejected: %+v", rs)
			case tc.reason != "" && (len(rs) != 1 || rs[0].reason != tc.reason || len(b.Envelopes) != 0):
				t.Fatalf("got %+v, kept %d, want one rejection for %q", rs, len(b.Envelopes), tc.reason)
			}
		})
	}
}

// A batch keeps its good envelopes, in order, around the bad ones.
func TestScreenKeepsOrder(t *testing.T) {
	env := func(node string) *remote.MessageEnvelope {
		return &remote.MessageEnvelope{MessageData: marshal(t, &messages.Heartbeat{Node: node})}
	}
	b := &remote.MessageBatch{
		TypeNames: []string{"tether.messages.Heartbeat", "tether.messages.NoSuchMessage"},
		Targets:   []*actor.PID{actor.NewPID("127.0.0.1:1", "echo")},
		Envelopes: []*remote.MessageEnvelope{env("a"), {TypeId: 1}, env("b"), {MessageData: notUTF8}, env("c")},
	}
	rs := newScreen(DefaultAccept()).batch(b)
	var reasons, kept []string
	for _, r := range rs {
		reasons = append(reasons, r.typeName+": "+r.reason)
	}
	for _, e := range b.Envelopes {
		var hb messages.Heartbeat
		if err := proto.Unmarshal(e.MessageData, &hb); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, hb.Node)
	}
	if want := []string{"tether.messages.NoSuchMessage: " + reasonUnknown, "tether.messages.Heartbeat: " + reasonMalformed}; !slices.Equal(reasons, want) {
		t.Errorf("rejections %q, want %q", reasons, want)
	}
	if !slices.Equal(kept, []string{"a", "b", "c"}) {
		t.Errorf("kept %v", kept)
	}
}

// The screen decodes every envelope once more than Proto.Actor does.
func BenchmarkScreenHeartbeat(b *testing.B) {
	data, err := proto.Marshal(&messages.Heartbeat{Node: "node-0001"})
	if err != nil {
		b.Fatal(err)
	}
	batch := &remote.MessageBatch{TypeNames: []string{"tether.messages.Heartbeat"}, Targets: []*actor.PID{actor.NewPID("127.0.0.1:1", "echo")}}
	for range 100 {
		batch.Envelopes = append(batch.Envelopes, &remote.MessageEnvelope{MessageData: data})
	}
	s := newScreen(DefaultAccept())
	b.ReportAllocs()
	for b.Loop() {
		if rs := s.batch(batch); len(rs) > 0 {
			b.Fatal(rs)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch.Envelopes)), "ns/envelope")
}
