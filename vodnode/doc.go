// Package vodnode is a VOD server node of the cluster (the seed's MS-VOD):
// an RTSP server of its own that checks the manager's admission token on
// every request and gives every session an independent playback of an
// MPEG-TS title (MP2T over RTP, payload type 33, over UDP or interleaved in
// TCP; raw TS over UDP for IPTV set-top boxes), paced in real time by the
// delivery engine (vodnode/deliver) from titles on local disk, filled from
// the origin while they play (vodnode/store). It registers with the
// manager, reports its load every heartbeat and each session's start and
// end, and carries out the manager's prefetch, evict and drain orders.
//
// Node is the server: set its exported fields, Start, Close.
package vodnode
