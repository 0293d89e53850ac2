// Package lsm is the Load Scheduling Module: the registry of VOD nodes and
// their load records, and the choice of a node for each admitted request.
//
// It owns: node records (capacity, weight, drain, liveness from heartbeats,
// slow start), bandwidth reservations (the QoS promise: reserved bit/s never
// exceed a node's egress capacity), the replica view (which node holds or is
// filling which title), the scheduling policies, chosen by name (Linux IPVS
// names where they exist), and the first-come-first-served queue of requests
// that found no node, with their deadlines.
//
// lsm is pure decision code: no sockets, no goroutines, no locks, and no
// time.Now; every call takes the current time. Callers serialise access (the
// manager holds one mutex; the simulator is single-threaded), so the same
// code runs in production and on the simulator's virtual clock.
package lsm
