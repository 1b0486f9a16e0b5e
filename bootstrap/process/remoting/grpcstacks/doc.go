// Package grpcstacks finds the goroutines of this process that run gRPC
// code, for tests: Proto.Actor's remote.Start writes gRPC's global logger
// without a lock (remote/server.go calls grpclog.SetLoggerV2), so a test
// that starts a remote in its process must do it while no gRPC goroutine
// of an earlier test is still running; and a leaked connection shows as a
// goroutine that never ends.
//
// See CONTRIBUTING.md#tests.
package grpcstacks
