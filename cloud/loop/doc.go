// Package loop is a cloud.Provider whose volumes are real block devices:
// a volume is a sparse image file under Config.Dir, attaching it binds a
// loop device (/dev/loopN) to the image, detaching releases the device.
// It needs Linux 5.8 or later and root (Open says why not: ErrNotRoot,
// ErrUnavailable).
//
// Its state file is the truth, rewritten atomically before a change
// returns, so an acknowledged change survives SIGKILL and a crash leaves
// at most an orphan device, which Open releases. It touches nothing
// outside its directory but the devices it binds, builds no path from an
// unchecked name, never acts after ctx's deadline, never retries, starts
// no goroutine, never formats or mounts, and has no global state.
//
// See docs/storage.md#the-loop-cloud-inside for the layout, the crash
// ordering and how Open reconciles.
package loop
