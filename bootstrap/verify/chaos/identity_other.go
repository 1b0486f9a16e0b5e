//go:build !linux

package chaos

// uniqueMountID: no unique mount IDs outside Linux.
func uniqueMountID(string) (uint64, bool) { return 0, false }
