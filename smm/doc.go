// Package smm is the Storage Management Module: title popularity, how many
// replicas each title needs and where, the prefetches to order from the
// origin (CDP) and the evictions to make room, without churn.
//
// It owns:
//   - Popularity: per-title decayed request rates and expected demand in
//     bit/s, and each viewers' site's share of it (popularity*.go);
//   - the eviction policies, small named implementations of Evictor: gdsf
//     (default), gdsf-classic, lfu, lru, w-tinylfu (evict*.go, sketch.go);
//   - Pins, the operator's pins to a node or to the cluster (pins.go);
//   - Replicator, the default Planner: replica counts with hysteresis,
//     placement, prefetch ordering with an off-peak window, per-node fill
//     limits and retry backoff; with sites (NodeView.Site, SitePlanner),
//     each title's replicas at the sites whose viewers ask for it; for
//     the operator, what it learnt, ranked by demand (PopularityCopy)
//     (replicat*.go);
//   - Storage, a storage policy by name: a Planner and the Evictor of each
//     node's disk that work together (storage.go).
//
// Subpackages: bound (the offline lower bounds on origin bytes, with the
// residency rule of a VOD node and for instants, and the trace CSV),
// replay (an eviction policy as one cache over a trace, with or without
// sessions), boundcheck (the `bound` command). docs/storage.md explains
// the policies, their sources, the bounds and the figures.
//
// smm is pure decision code: no sockets, no goroutines, no time.Now;
// every call takes the current time, so the manager and the simulator (on
// a virtual clock) run the same code. Its types are not safe for
// concurrent use (the manager serialises calls), with one exception: a
// Replicator's Plan can be split (StartPlan, PlanJob.Run, FinishPlan) so
// that its computation runs on a copy of the Replicator's state, without
// the caller's lock, while the Replicator is used (replicate_job.go). The
// only lock is the RWMutex of the eviction policy registry
// (RegisterEvictor, Evictors, NewEvictor).
package smm
