//go:build ignore

// distbenchcheck reads tether bench --distributed --json on stdin and
// fails unless bench.CheckDistributedJSON accepts it (every field of both
// sides, every phase measured or marked not applicable, no lease lapse):
// `go run .ci/distbenchcheck.go < bench.json`.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/tether/tether/bootstrap/verify/bench"
)

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err == nil {
		err = bench.CheckDistributedJSON(data)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "distbenchcheck:", err)
		os.Exit(1)
	}
	fmt.Println("distbenchcheck: ok")
}
