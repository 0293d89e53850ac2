// Package deliver is the VOD node's delivery engine: it streams MPEG-TS
// titles to many viewers at once, each viewer an independent playback
// (Stream: its own position, pause and seek), paced in real time from the
// clock inside the stream (the PCR, ISO/IEC 13818-1), as RTP (payload type
// 33, RFC 2250: 7 TS packets per RTP packet, fewer over UDP where the
// route's MTU is smaller: udpRoom) over UDP or interleaved in the
// RTSP TCP connection (RFC 2326 §10.12), or as raw TS over UDP.
//
// Streams are served by a few pacer goroutines (shards, one per core by
// default), each waking every Tick to send every stream of its shard what
// has become due (and, once something is due, what falls due within the
// next Batch, so that writes are few and large): one pread into a shared
// arena per stream, one write per TCP connection per wake, and the UDP
// datagrams of all its streams batched into sendmmsg calls, each stream's
// datagrams as one UDP GSO train (UDP_SEGMENT) where the kernel offers it.
// A slow TCP reader never blocks the others: writes are non-blocking with a
// bounded queue per connection, and a stream that falls MaxLag behind is
// ended.
//
// ESStream plays the same titles as H.264 and AAC tracks instead, with a
// goroutine per stream.
package deliver
