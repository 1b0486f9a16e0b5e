// Package messages holds every protobuf message that crosses an actor
// boundary in tether. The .pb.go files are generated and committed; never
// edit them by hand. Regenerate with `go generate ./messages` (needs protoc
// from Debian's protobuf-compiler; protoc-gen-go is pinned below).
package messages

//go:generate sh -c "GOBIN=$(pwd)/../.bin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12 && protoc --plugin=protoc-gen-go=$(pwd)/../.bin/protoc-gen-go --go_out=. --go_opt=paths=source_relative -I. *.proto"
