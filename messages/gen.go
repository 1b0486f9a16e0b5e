// Package messages holds every protobuf message that crosses an actor
// boundary in tether. The .pb.go files are generated and committed; never
// edit them by hand. Regenerate with `go generate ./messages` (needs protoc
// from Debian's protobuf-compiler; protoc-gen-go and protoc-gen-go-grpc are
// pinned below and installed into .bin/).
package messages

//go:generate sh -c "GOBIN=$(pwd)/../.bin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12 && GOBIN=$(pwd)/../.bin go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1 && protoc --plugin=protoc-gen-go=$(pwd)/../.bin/protoc-gen-go --plugin=protoc-gen-go-grpc=$(pwd)/../.bin/protoc-gen-go-grpc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative -I. *.proto"
