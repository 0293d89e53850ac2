// Package sim is the discrete-event simulator behind `vodcluster sim`. It
// drives the real lsm scheduler and smm storage code on a virtual clock
// (no sleeps, no sockets) through a seeded day (or days) of IPTV demand:
// Zipf title popularity that drifts day by day, new titles, Poisson
// arrivals under a daily curve with an evening peak, sessions with a heavy
// early-abandon share and a long tail, heterogeneous nodes whose disks are
// caches of whole titles run by an smm storage policy (smm.NewStorage: the
// planner, and an Evictor per disk), an origin (CDP) with limited channels
// and a setup delay, node failures and returns, and optionally sites with
// their own tastes (Sites) and the traffic served across them.
//
// It owns: the demand and cluster model (Config, with defaults and strict
// YAML loading), the event loop that runs each storage and scheduling
// policy on the same demand (Run), the per-run figures (Result) with the
// offline bounds on origin bytes for the run's served requests (package
// smm/bound, computed exactly as `vodcluster bound` computes them from the
// trace), their table, JSON, SVG load plot and request-trace CSV writers,
// and the cobra command (NewCommand).
package sim
