// Package cdp is the origin, the content distribution platform of the
// cluster: it owns the operator's full catalog of MPEG-TS titles (id, name,
// duration, bitrate, size, entitlement package) and serves their bytes in
// ranges over gRPC (service vodcluster.v1.Origin) to the VOD nodes that fill
// titles they lack.
//
// The catalog is a directory of .ts files, described by an optional
// catalog.yaml (see LoadCatalog). Every title file is scanned once at load
// with cdp/tsindex for its duration, mean bitrate and longest HLS segment
// (which a node's playlists declare as their target duration), and hashed
// (SHA-256) for its version, which a node's Fetch may name (if_version) so
// that the bytes it resumes from are never mixed with those of a replaced
// file.
// A started Server watches the directory (reload.go) and reads it again
// when it changes, scanning only new and changed files; a catalog that
// does not load is refused and the one before kept.
//
// Server models the cost of the upstream link described in the seed
// documents: each transfer waits for one of MaxTransfers channels, pays a
// SetupDelay once, says it started (FetchChunk.started: a node bounds the
// silence of a transfer from there, not while it queues), then is paced to
// TransferRateBps. When every channel is busy, the transfers give way by
// what they are for (preempt.go): a fill a viewer waits for ends a
// prefetch (FetchRequest.prefetch), or else a node's read far ahead of a
// fill (FetchRequest.preemptible), and such a read ends a prefetch; a
// prefetch queues behind the fills. Stats counts transfers
// per title so tests can assert that a title was fetched exactly once.
//
// Subpackages: tsindex (the MPEG-TS index shared with the nodes) and
// samples (the embedded sample titles used by tests and `vodcluster up`).
package cdp
