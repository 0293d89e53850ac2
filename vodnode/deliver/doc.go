// Package deliver is the VOD node's delivery engine: it streams MPEG-TS
// titles to many viewers at once, each viewer an independent playback
// (Stream: its own position, pause and seek), paced in real time from the
// clock inside the stream (the PCR, ISO/IEC 13818-1), as RTP (payload type
// 33, RFC 2250: 7 TS packets per RTP packet) over UDP or interleaved in the
// RTSP TCP connection (RFC 2326 §10.12), or as raw TS over UDP.
//
// Streams are served by a few pacer goroutines (shards, one per core by
// default), each waking every Tick to send every stream of its shard what
// has become due: one pread into a shared arena per stream, one write per
// TCP connection per wake, and UDP datagrams of all its streams batched into
// sendmmsg calls. A slow TCP reader never blocks the others: writes are
// non-blocking with a bounded queue per connection, and a stream that falls
// MaxLag behind is ended.
package deliver
