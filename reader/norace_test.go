//go:build !race

package reader

// raceEnabled is set in builds with the race detector, under which
// slices.Grow allocates a temporary of the size it grows by.
const raceEnabled = false
