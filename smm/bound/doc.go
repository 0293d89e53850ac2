// Package bound computes lower bounds on the origin traffic of any caching
// policy for a request trace, the "offline optimum" the storage policies
// are measured against: the whole cluster's disk taken as one cache of
// whole titles run by a policy that knows the future.
//
// Residency computes the bound for a VOD cluster: a node streams a title
// from its own disk for the whole session, so each title must stay cached
// from its request to the end of its session (overlapping sessions of a
// title share one copy). It is FOO's interval LP (D. S. Berger, N.
// Beckmann, M. Harchol-Balter, "Practical Bounds on Optimal Caching with
// Variable Object Sizes", SIGMETRICS 2018) with those forced intervals
// taking their share of the capacity at every instant, bounded from above
// by PFOO-L and by its Lagrangian dual; residency.go proves each step.
//
// Compute is the instant bound of the paper, every request an instant: for
// titles of equal size, Belady's MIN (L. A. Belady, "A study of replacement
// algorithms for a virtual-storage computer", IBM Systems Journal 5(2),
// 1966), which is exact; otherwise PFOO-L tightened by the same dual. It
// lets a title leave the cache while it plays, so it is lower, and is kept
// for reference.
//
// It also reads and writes the request trace CSV that `vodcluster sim
// --trace-out` produces (with end_s, the end of each session), so anyone
// can recompute the bounds. Pure code: no I/O beyond the io.Reader/
// io.Writer it is given.
package bound
