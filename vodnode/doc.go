// Package vodnode is a VOD server node of the cluster (the seed's MS-VOD):
// an RTSP server of its own that checks the manager's admission token on
// every request and gives every session an independent playback of an
// MPEG-TS title (MP2T over RTP, payload type 33, over UDP or interleaved in
// TCP; raw TS over UDP for IPTV set-top boxes; H.264 and AAC tracks in
// elementary-stream mode; PAUSE, seek and Scale trick play; the session
// stays, paused at the end of the title, until TEARDOWN or its timeout),
// paced in real time by the delivery engine (vodnode/deliver) from titles
// on local disk, filled from the origin while they play (vodnode/store;
// a fill cut short keeps its bytes for the next one to resume from);
// and HTTP delivery of the same titles (progressive MPEG-TS with byte
// ranges, HLS cut at keyframes). One admission token starts one viewer's
// session (admission.go). It registers with the manager, reports its load
// every heartbeat and each session's start, end and refusal, and carries
// out the manager's prefetch, evict and drain orders.
//
// URLs carry the admission token in the path (rtsp://host/s/<token>/vod/<title>,
// .../vod/<title>/es or .../es/<title> for elementary streams,
// http://host/s/<token>/vod/<title>.ts or .../<title>/index.m3u8) or in the
// query (?token=<token>). docs/delivery.md describes what clients get.
//
// Node is the server: set its exported fields, Start, Close.
package vodnode
