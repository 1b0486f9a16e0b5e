package remoting

import (
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tether/tether/bootstrap/operator/certs"
)

const wait = 5 * time.Second // bound of every wait in these tests

// certSet writes a CA, a server pair naming hosts and a client pair.
func certSet(t *testing.T, hosts ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	if _, err := certs.WriteSet(dir, certs.SetOptions{Hosts: hosts, ValidFor: 24 * time.Hour, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tlsFiles is the mutual TLS of a process from a tether certs set.
func tlsFiles(dir string) TLSFiles {
	return TLSFiles{
		Cert: filepath.Join(dir, certs.ServerFile), Key: filepath.Join(dir, certs.ServerKeyFile),
		CA:         filepath.Join(dir, certs.CAFile),
		ClientCert: filepath.Join(dir, certs.ClientFile), ClientKey: filepath.Join(dir, certs.ClientKeyFile),
	}
}

// madeUp is a message of a type named pkg.name that no registry of this
// binary holds, with one bytes field (number 1) set to payload. Named as
// a linked type whose field 1 is a string, it is one that does not
// decode when payload is not UTF-8.
func madeUp(pkg, name string, payload []byte) *dynamicpb.Message {
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("made_up_" + name + ".proto"),
		Package: proto.String(pkg),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String(name),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name:     proto.String("payload"),
				JsonName: proto.String("payload"),
				Number:   proto.Int32(1),
				Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				Type:     descriptorpb.FieldDescriptorProto_TYPE_BYTES.Enum(),
			}},
		}},
	}
	fd, err := protodesc.NewFile(fdp, new(protoregistry.Files))
	if err != nil {
		panic(err) // the descriptor above is fixed
	}
	md := fd.Messages().Get(0)
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().Get(0), protoreflect.ValueOfBytes(payload))
	return m
}
