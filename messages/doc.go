// Package messages holds every protobuf message that crosses an actor
// boundary in tether, and the operator API and cloud services. The .pb.go
// files are generated and committed; never edit them by hand: regenerate
// with `go generate ./messages` (protoc-gen-go and protoc-gen-go-grpc are
// pinned in gen.go and installed into .bin/).
//
// See CONTRIBUTING.md#protobuf.
package messages
