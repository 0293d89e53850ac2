// Package replay runs an smm eviction policy as one cache over a request
// trace, the baseline that the offline bound (package bound) is compared
// with: Run over instants, RunSessions under the residency rule (a title
// stays while its sessions play), and Oracle, gdsf knowing each title's
// request count in advance. It also generates synthetic traces (Zipf
// popularity, variable title sizes). Pure code: no I/O, no goroutines, no
// wall clock.
package replay
