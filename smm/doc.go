// Package smm is the Storage Management Module: title popularity, how many
// replicas each title needs and where, the prefetches to order from the
// origin (CDP) and the evictions to make room, without churn.
//
// Like lsm, smm is pure decision code: no sockets, no goroutines, no
// time.Now; every call takes the current time, so the manager and the
// simulator (on a virtual clock) run the same code. The eviction policies
// are small named implementations of one interface (Evictor), used both by
// the manager's planner and by a node that must make room at once.
package smm
