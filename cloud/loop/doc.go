// Package loop is a cloud whose volumes are real block devices: it
// implements cloud.Provider as the sim does, on this host's loop driver.
// A volume is a sparse image file; attaching it binds a loop device to the
// image and reports that device's path (/dev/loopN), which a node can
// format and mount; detaching it releases the device. It needs Linux (5.8
// or later) and root: Open says clearly why it cannot run otherwise
// (ErrNotRoot, ErrUnavailable).
//
// It owns one data directory (Config.Dir), and never touches anything
// outside it but the loop devices it binds:
//
//	Dir/lock             flock'd while a Cloud has the directory open (ErrInUse)
//	Dir/state.json       instances, volumes, attachments
//	Dir/images/<vol>.img one sparse image per volume
//
// Dir is made absolute with its symlinks resolved (the kernel shows a
// device's backing file by such a path); Dir and Dir/images must be real
// directories, and images are opened without following symlinks. Every
// volume ID, node name and instance ID a method that may change something
// (or ImagePath, or InstanceID) is given is checked with names.ValidName
// before anything else, so no path is ever built from an unchecked name:
// an invalid one fails with an error wrapping names.ErrInvalidName and
// cloud.ErrTerminal. Queries simply find nothing under such a name; the
// state file's names are checked when it is read.
//
// Instances are records, as in the sim: an instance backs a node (ID
// "i-<node>-<counter>"), runs or is stopped, and has an attach limit
// (Config.AttachLimit, SetAttachLimit). Terminate, Start, Replace, Delete
// and ConsoleDetach change them from the cloud's side; CreateVolume(s) and
// DeleteVolume (refused while attached) manage volumes. A new image is
// zeroed; VolumeSpec.Prepare lets the caller put content on it (a
// filesystem) before the volume exists.
//
// Access modes. An exclusive volume has at most one device: attaching it
// to a second instance fails with cloud.ErrAttachedElsewhere. A MultiNode
// volume gets one device per instance, all of the same image. A volume
// created ReadOnly (VolumeSpec) is bound read-only on every instance
// (ReadOnlyMany: no device can write to it, so every machine may mount
// what is on it, and none can format it, hence Prepare); any other is
// bound read-write, MultiNode ones included (ReadWriteMany: as on a
// multi-attach disk, only a file system made for it survives two
// writers, which ext4 is not: tether refuses such volumes on this cloud).
//
// The state file is the cloud's truth; devices are how it is carried out.
// It is rewritten whole and atomically (temporary file, fsync, rename,
// fsync of the directory) before a change returns, so an acknowledged
// change survives SIGKILL. Changes are ordered so that a crash can only
// leave an orphan (a device bound to one of the images that no record
// claims), never a record whose device was released by the cloud: Attach
// binds, then writes; Detach, Terminate, Replace, Delete and ReleaseAll
// write, then release. Orphans are released by Open, before any new
// device of their volume is bound (so an exclusive volume never has two),
// by CreateVolume and DeleteVolume of their volume, and by ReleaseAll. The cloud never releases a
// device it has not checked, on a descriptor that pins the binding, to be
// bound to one of its images: a stale record never releases someone
// else's device.
//
// Open reconciles. Loop devices survive the process but not a reboot, and
// anyone may release or rebind one. For each recorded attachment Open
// checks what its device is bound to: the same image file, read-only as
// the volume says, claimed by no earlier record, and the record stands;
// otherwise the attachment is kept and a new device bound to the image
// (its path may differ: cloud.Provider allows it, and tether's sync
// corrects the device paths it recorded from InstanceVolumes). Open fails
// if it cannot, releasing what it bound, or if a volume's image is
// missing. Attach of an attached volume checks the same way and binds a
// new device if the record is stale. Close releases the directory and
// detaches nothing, as a real cloud's attachments outlive its clients;
// ReleaseAll detaches everything (tests' cleanups, an operator tearing
// the cloud down).
//
// Provider calls follow cloud.Provider. A call whose ctx is done is not
// sent. A sent call is carried out whatever happens to ctx: it is short
// (a few ioctls and one state write), so it runs to its end in the
// caller's goroutine, its wait not cut short by a cancellation. It never
// takes effect after ctx's deadline, checked with Config.Now before
// binding or releasing and again before the state write (a device bound
// meanwhile is released). Errors are classified: unknown volume or
// instance cloud.ErrNotFound; stopped instance, no free loop device, a
// failed write cloud.ErrRetryable (no effect); too large a batch or an
// invalid name cloud.ErrTerminal. VolumesAreAttached and InstanceVolumes
// read the state, one call per batch of at most Config.BatchSize
// instances.
//
// A Cloud is safe for concurrent use. One mutex serializes changes, each
// from its checks to its state write, device calls included: they take
// milliseconds, and holding it makes check, bind and record one step.
// Readers never take it: they read the last published state, which is
// durable and never modified (a change publishes a new one). It never
// retries, starts no goroutine, never formats or mounts anything itself
// (a Prepare is its caller's code), and has no global state; only one
// Cloud may have a data directory open at a time.
package loop
