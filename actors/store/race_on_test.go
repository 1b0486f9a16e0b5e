//go:build race

package store

// raceEnabled: the race detector slows the checks several times over.
const raceEnabled = true
