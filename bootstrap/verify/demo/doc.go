// Package demo is tether demo: the embedded system through a scripted
// scenario (attach, lose a node, heal, move, delete), on the sim cloud or
// on the loop cloud (real loop devices, formatted ext4 and mounted), with
// the chaos checker judging invariants I1-I4 on the timeline of the
// ground truth; or on csitest's fake CSI driver, served in this process
// (csi.go, csi_steps.go: mount, hold across sync passes, restart an
// agent, hand a volume over, delete), judged on the driver's own state
// and its log of the calls it received (csi_judge.go). It never judges
// by tether's own report.
package demo
