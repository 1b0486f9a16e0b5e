//go:build !linux

package mount

// realDirs cannot tell without openat2(2): checkParents walks.
func realDirs(*opc, string) bool { return false }
