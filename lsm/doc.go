// Package lsm is the Load Scheduling Module: the registry of VOD nodes and
// their load records, and the choice of a node for each admitted request.
//
// It owns: node records (capacity, weight, drain, liveness from heartbeats,
// slow start), bandwidth reservations (the QoS promise: reserved bit/s never
// exceed a node's egress capacity), the replica view (which node holds or is
// filling which title, with a per-title index and the bytes in use per
// node), the load formula of DESIGN.md (Scheduler.Load), the scheduling
// policies, chosen by name (Policies: the Linux IPVS schedulers rr, wrr,
// lc, wlc, sed, nq, lblc, lblcr, dh, sh, mh, twos; lard and lard/r; chbl;
// and the default lall), and the first-come-first-served queue of requests
// that found no node, with their deadlines.
//
// Files: config.go (Config, Request, Reservation, errors), scheduler.go
// (nodes, heartbeats, liveness), remove.go (RemoveNode: a decommissioned
// node forgotten), replica.go (replica and reservation
// bookkeeping), place.go (admission rule, load, Place/Reserve/Release),
// queue.go (Admit/Pump), filltree.go (the default policy's search for a
// fill node), partial.go (the nodes' partly filled titles, which the
// default policy charges only for the bytes missing), policy*.go (one file
// per family).
//
// lsm is pure decision code: no sockets, no goroutines, and no time.Now;
// every call takes the current time. A Scheduler is not safe for
// concurrent use: callers serialise access (the manager holds one mutex;
// the simulator is single-threaded), so the same code runs in production
// and on the simulator's virtual clock. The only lock is the RWMutex of
// the policy registry (Register, Policies, NewPolicy), which init
// functions fill and schedulers read.
package lsm
