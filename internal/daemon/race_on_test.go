//go:build race

package daemon

// raceEnabled: the race detector slows the in-memory network tenfold, so
// the heaviest tests run a smaller storm under it.
const raceEnabled = true
