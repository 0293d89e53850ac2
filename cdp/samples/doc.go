// Package samples holds the sample titles of the origin, embedded in the
// binary: three 20-second MPEG-TS clips and a catalog.yaml that maps
// sample-001 ... sample-020 onto them in turn (sample-001 on clip-a.ts,
// sample-002 on clip-b.ts, sample-003 on clip-c.ts, sample-004 on clip-a.ts,
// ...); sample-001..010 are in entitlement package "basic",
// sample-011..020 in "premium"; sample-016..018 carry a popularity hint
// (promoted titles the storage manager prefetches before anyone asks).
// Tests and `vodcluster up` write them to a
// directory with WriteTo and point a cdp.Server at it.
//
// The clips were made by make-samples.sh (run `make samples` to regenerate)
// with ffmpeg from its synthetic lavfi sources: testsrc2 (clip-a, 440 Hz
// tone), SMPTE HD bars (clip-b, 660 Hz, with a running clock
// when ffmpeg has drawtext) and a
// Mandelbrot zoom (clip-c, 880 Hz). Each is H.264 High profile 640x360 at
// 25 fps with a keyframe every 25 frames (one per second, no scene-cut
// keyframes), 450 kbit/s CBR (nal-hrd=cbr), plus AAC-LC stereo 48 kHz at
// 64 kbit/s, muxed to MPEG-TS at a constant 600 kbit/s with a PCR every
// 40 ms and PAT/PMT repeated, so a player can start at any keyframe.
package samples
