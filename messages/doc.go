// Package messages holds every protobuf message that crosses an actor
// boundary in tether. The .pb.go files are generated and committed; never
// edit them by hand. Regenerate with `go generate ./messages` (needs protoc
// from Debian's protobuf-compiler; protoc-gen-go and protoc-gen-go-grpc are
// pinned below and installed into .bin/).
package messages
