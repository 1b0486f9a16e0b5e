// Package demo is tether demo: the embedded system through a scripted
// scenario (attach, lose a node, heal, move, delete) on the sim or the
// loop cloud, judged by the chaos checker (I1-I4) on the timeline of the
// ground truth; or on csitest's fake CSI driver in this process (csi.go,
// csi_steps.go), judged on the driver's own state and its log of calls
// (csi_judge.go). It never judges by tether's own report.
//
// See docs/operating.md#tether-demo and
// docs/storage.md#the-demo-on-csi-tether-demo---csi.
package demo
