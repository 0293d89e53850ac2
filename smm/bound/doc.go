// Package bound computes lower bounds on the origin traffic of any caching
// policy for a request trace, the "offline optimum" the storage policies
// are measured against: the whole cluster's disk taken as one cache of
// whole titles run by a policy that knows the future.
//
// For titles of equal size the bound is exact: Belady's MIN (L. A. Belady,
// "A study of replacement algorithms for a virtual-storage computer", IBM
// Systems Journal 5(2), 1966). For variable sizes exact offline caching is
// NP-hard; the bound is PFOO-L (D. S. Berger, N. Beckmann, M.
// Harchol-Balter, "Practical Bounds on Optimal Caching with Variable Object
// Sizes", SIGMETRICS 2018), a relaxation that only enforces the cache size
// on average over the trace, so no policy, online or offline, can fetch
// fewer bytes (or fewer titles) than it says.
//
// It also reads and writes the request trace CSV that `vodcluster sim
// --trace-out` produces, so anyone can recompute the bound. Pure code: no
// I/O beyond the io.Reader/io.Writer it is given.
package bound
