//go:build race

package daemon_test

// raceEnabled: the race detector makes scanning a multi-megabyte frame
// twenty times slower, past the tests' timeouts.
const raceEnabled = true
