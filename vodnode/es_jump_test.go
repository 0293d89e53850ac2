package vodnode

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jumpTimestamps returns a copy of the MPEG-TS data whose audio and video
// PES packets starting at or after byte from have their PTS and DTS moved
// by delta 90 kHz ticks (modulo 2^33), their PCRs left as they are: the
// timestamps jump at from while the stream clock runs on, as in a splice
// of two encodes remultiplexed with one continuous PCR.
func jumpTimestamps(t *testing.T, data []byte, delta int64, from int) []byte {
	t.Helper()
	const wrap, size = int64(1) << 33, 188
	out := append([]byte(nil), data...)
	get := func(b []byte) int64 {
		return int64(b[0]>>1&7)<<30 | int64(b[1])<<22 | int64(b[2]>>1)<<15 | int64(b[3])<<7 | int64(b[4]>>1)
	}
	put := func(b []byte, v int64) {
		v = (v%wrap + wrap) % wrap
		b[0] = b[0]&0xf0 | byte(v>>29)&0x0e | 1
		b[1] = byte(v >> 22)
		b[2] = byte(v>>14)&0xfe | 1
		b[3] = byte(v >> 7)
		b[4] = byte(v<<1) | 1
	}
	for off := from - from%size; off+size <= len(out); off += size {
		b := out[off : off+size]
		if b[0] != 0x47 {
			t.Fatalf("no sync byte at %d", off)
		}
		afc, p := b[3]>>4&3, 4
		if afc&2 != 0 {
			p += 1 + int(b[4])
		}
		if b[1]&0x40 == 0 || afc&1 == 0 || p+14 > size || b[p] != 0 || b[p+1] != 0 || b[p+2] != 1 || b[p+3] < 0xc0 {
			continue // not the start of an audio or video PES
		}
		flags := b[p+7] >> 6
		if flags&2 != 0 {
			put(b[p+9:], get(b[p+9:])+delta)
		}
		if flags == 3 {
			put(b[p+14:], get(b[p+14:])+delta)
		}
	}
	return out
}

// TestFFmpegESAcrossTimestampJump: ffmpeg plays in elementary-stream mode,
// over TCP and UDP, a title whose PTS and DTS jump 10 s forward or back
// 3 s in while its PCR runs on: it decodes every picture and audio frame
// of the title, with no gap in either track's timestamps, and ends (at the
// BYE) in about the title's play time. (The node waited the 10 s of a jump
// forward before sending on; after one backward it held the packets read
// before it and sent the others with timestamps 10 s back.)
func TestFFmpegESAcrossTimestampJump(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	const play = 8 // seconds
	title := prefix(t, clip(t, "clip-a.ts"), play)
	at := len(prefix(t, title, 3))
	o := newFakeOrigin(t)
	o.titles["jump-fwd"] = jumpTimestamps(t, title, 10*90000, at)
	o.titles["jump-back"] = jumpTimestamps(t, title, -10*90000, at)
	n := startNode(t, startOrigin(t, o))
	want := [2]int{bytesFrames(t, "0:v", title), bytesFrames(t, "0:a", title)}
	for _, name := range []string{"jump-fwd", "jump-back"} {
		for _, tr := range []string{"tcp", "udp"} {
			t.Run(name+"-"+tr, func(t *testing.T) {
				t.Parallel()
				url := esURL(n, mint(t, "es-"+name+"-"+tr, name, "node-1", "", time.Minute), name)
				ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-nostats", "-loglevel", "error",
					"-rtsp_transport", tr, "-i", url, "-map", "0:v", "-map", "0:a", "-fps_mode", "passthrough",
					"-f", "framecrc", "-flush_packets", "1", "-")
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				var tb [2]float64 // seconds per tick of each output stream
				var frames [2]int
				var last, gap [2]float64      // seconds
				var firstAt, lastAt time.Time // the first and last frame out of ffmpeg
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					line := sc.Text()
					if v, ok := strings.CutPrefix(line, "#tb "); ok { // "#tb 0: 1/25"
						var i, num, den int
						if _, err := fmt.Sscanf(v, "%d: %d/%d", &i, &num, &den); err == nil && i < 2 && den > 0 {
							tb[i] = float64(num) / float64(den)
						}
						continue
					}
					f := strings.Split(line, ",")
					if len(line) == 0 || line[0] == '#' || len(f) < 2 {
						continue
					}
					i, err1 := strconv.Atoi(strings.TrimSpace(f[0]))
					dts, err2 := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 64)
					if err1 != nil || err2 != nil || i > 1 {
						t.Fatalf("framecrc line %q", line)
					}
					s := float64(dts) * tb[i]
					if lastAt = time.Now(); firstAt.IsZero() {
						firstAt = lastAt
					}
					if frames[i] > 0 {
						gap[i] = max(gap[i], s-last[i])
					}
					last[i] = s
					frames[i]++
				}
				err = cmd.Wait()
				elapsed := time.Since(start)
				if ctx.Err() != nil {
					t.Fatalf("ffmpeg still playing %v after it started (%v frames)\n%s", elapsed, frames, stderr.String())
				}
				if err != nil {
					t.Fatalf("ffmpeg: %v\n%s", err, stderr.String())
				}
				t.Logf("%v frames (the title has %v), largest intervals %.3f s, %.3f s, in %v", frames, want, gap[0], gap[1], elapsed)
				for i, s := range []string{"video", "audio"} {
					if frames[i] < want[i]*9/10 || frames[i] > want[i] {
						t.Errorf("%s: ffmpeg decoded %d frames of the title's %d", s, frames[i], want[i])
					}
					if gap[i] > 0.5 {
						t.Errorf("%s: the timestamps ffmpeg gives skip %.3f s", s, gap[i])
					}
				}
				// Its frames come out at the pace of the play: a jump
				// forward stalled them 10 s. From the first frame out
				// (ffmpeg's start and probe on a loaded machine left out).
				if span := lastAt.Sub(firstAt); span > (play+3)*time.Second {
					t.Errorf("%d s of title played in %v, its frames out of ffmpeg over %v", play, elapsed, span)
				}
			})
		}
	}
}
