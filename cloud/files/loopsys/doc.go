// Package loopsys reads what the kernel shows of a loop device in sysfs:
// the backing file of a bound device. The loop cloud and the node agents
// both read it, so the rule for a device that is not bound lives here, in
// a leaf they share (as realdir): apart, the two drifted (the loop cloud
// learnt that a device being unbound answers ENODEV, and the agents' reads
// learnt it one CI failure later).
package loopsys
