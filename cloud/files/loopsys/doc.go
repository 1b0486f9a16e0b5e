// Package loopsys reads what the kernel shows of a loop device in sysfs:
// the backing file of a bound device. The loop cloud and the node agents
// both read it, so the rule for a device that is not bound (ENODEV while
// it is being unbound) lives here, in a leaf they share: apart, the two
// drifted.
//
// See docs/storage.md#real-storage---cloud-loop.
package loopsys
