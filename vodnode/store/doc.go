// Package store owns the titles on a VOD node's disk: the MPEG-TS files in
// <DataDir>/titles/<id>.ts with their indexes (tsindex, persisted beside the
// file as <id>.idx), the fills that copy a missing title from the origin
// (CDP) into <id>.ts.part while it is already being read (resuming where
// it stopped when the origin goes away for a while), the partials that
// fills stopped short leave for the next fill of their title to resume
// from (partial.go: <id>.ts.part with <id>.ts.part.meta, never served as
// the title), and the eviction that makes room for a fill: partials
// first, then whole titles chosen by an smm.Evictor. Before a fill it asks
// the origin for the title as it is now (Origin.GetTitle), so that it
// fills the version the origin serves; each copy's version is kept in its
// index and reported, so that the manager can evict a stale one. A fill
// hashes its bytes as it writes them (a resumed one, the partial's as it
// indexes them again) and keeps the copy only when they are the version the
// origin announced (the CDP's: the first 128 bits of their SHA-256); else
// it fails, keeps neither copy nor partial, and the next fill asks the
// origin again. An origin that gives no version is not checked. An open Store holds an
// exclusive flock(2) on <DataDir>/titles/.lock, so that no two processes
// share the directory.
//
// Readers hold a Title between Acquire and Release; a held or filling title
// is never evicted, but for the operator's eviction (EvictOrCancel) of a
// prefetch no viewer needs, which cancels its fill and drops its bytes.
// Exactly one fill runs per title however many readers wait for it, and
// readers that catch up with a fill are woken by the fill's progress
// (Title.Notify), not by polling.
package store
