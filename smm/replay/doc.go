// Package replay runs an smm eviction policy as one cache over a request
// trace, the baseline that the offline bound (package bound) is compared
// with, and generates synthetic traces (Zipf popularity, variable title
// sizes) to exercise both. Pure code: no I/O, no goroutines, no wall
// clock.
package replay
