// Package acm is the manager's top: the Admission Control Module and the
// manager's control plane, hosting the scheduler (lsm) and the storage
// manager's decisions (smm) in one process.
//
// It owns the front doors (RTSP, rtsp://front/vod/<title>, and HTTP,
// /vod/<title>.ts and /vod/<title>/index.m3u8): authentication against the
// BOSS (Basic and Digest, each Digest answer accepted once; failed logins
// limited per client address and user, loginguard.go) or with a subscriber
// token the operator's portal signed (authn.go), a limit on each subscriber's title requests
// (ratelimit.go), entitlement, admission (the title's bitrate is
// reserved on a node chosen by lsm, or the request waits first come first
// served until the queue deadline, then 453 / 503; at once 503 when every
// node that could take it is drained or at weight 0, operatorheld.go), and
// the redirect (302)
// to the chosen node with a signed admission token. It owns the session
// table and the catalog, kept in a Store that survives restarts, and the
// manager's gRPC services: NodeControl (registration, heartbeats with
// commands back, session events, node death, no-show release) and Admin
// (an operator forgets a dead or decommissioned node with everything
// kept of it, forget.go).
//
// It runs the storage manager's decisions (smm) against the real nodes:
// the storage policy chosen by name (Manager.Evictor, default gdsf with
// the Replicator planner) observes every request and every session's
// length, plans every PlanInterval and early when demand shifts, and its
// prefetch and evict orders go down the nodes' heartbeat streams in order
// (planner.go, placement.go). A plan is computed without the manager's
// lock, on a snapshot of the nodes and a copy of the Replicator, so the
// front door does not wait for it; each order is checked against the
// state when it is carried out. The outcome of each fill is learnt from the
// nodes' load reports (done, failed, vanished, never started) and fed
// back for retries with backoff (fills.go). A fill on demand makes room
// with the node's Evictor, never evicting a title playing, filling or
// pinned (admission.go). The operator's pins and the popularity snapshot
// are kept in the Store; catalog popularity hints are priors of the
// request rate (storage.go); the admin API lists placement and fills and
// orders prefetches, evictions and pins (admin_storage.go; the operator's
// eviction, which cancels a prefetch under way no viewer needs,
// admin_evict.go), and lists the
// popularity the planner learnt (admin_popularity.go).
//
// Two managers may share a Redis store, active and standby behind the
// front door's virtual IP: a lease in the store (leader.go) elects the one
// that plans storage, and the standby takes over the sessions, pins and
// popularity when it takes the lease.
//
// Manager is the one server of the package: exported config fields,
// Start (all or nothing) and Close.
package acm
