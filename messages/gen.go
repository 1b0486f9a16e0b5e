package messages

//go:generate sh -c "GOBIN=$(pwd)/../.bin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12 && GOBIN=$(pwd)/../.bin go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1 && protoc --plugin=protoc-gen-go=$(pwd)/../.bin/protoc-gen-go --plugin=protoc-gen-go-grpc=$(pwd)/../.bin/protoc-gen-go-grpc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative -I. *.proto"
