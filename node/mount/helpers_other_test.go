//go:build !linux

package mount

import "testing"

func requireBind(t *testing.T) {
	t.Helper()
	t.Skip("bind mounts are implemented on Linux only")
}

func canBind(*testing.T) (bool, string) { return false, "bind mounts are implemented on Linux only" }

func unmountUnder(testing.TB, string) {}

func noHold() {}
