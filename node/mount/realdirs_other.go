//go:build !linux

package mount

// realDirs cannot tell without openat2(2): checkParents walks.
func realDirs(string) bool { return false }
