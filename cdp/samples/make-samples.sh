#!/usr/bin/env bash
# Regenerates the sample clips served as sample-001 ... sample-020.
# Real H.264 (High, 25 fps, a keyframe every second) + AAC-LC in MPEG-TS,
# made by ffmpeg from its synthetic sources, small enough to commit.
# Usage: cdp/samples/make-samples.sh   (needs ffmpeg)
set -euo pipefail
cd "$(dirname "$0")"
enc() { # name video-source audio-frequency
  ffmpeg -hide_banner -loglevel error -y \
    -f lavfi -i "$2" -f lavfi -i "sine=frequency=$3:sample_rate=48000" -t 20 \
    -c:v libx264 -preset veryfast -profile:v high -pix_fmt yuv420p -g 25 -keyint_min 25 -sc_threshold 0 \
    -b:v 450k -maxrate 500k -bufsize 500k -x264-params nal-hrd=cbr \
    -c:a aac -b:a 64k -ac 2 \
    -f mpegts -muxrate 600k -mpegts_flags +resend_headers -pcr_period 40 "$1"
}
enc clip-a.ts "testsrc2=size=640x360:rate=25" 440
enc clip-b.ts "smptehdbars=size=640x360:rate=25,drawtext=text='%{pts\\:hms}':fontsize=48:x=20:y=20:fontcolor=white" 660 || \
enc clip-b.ts "smptehdbars=size=640x360:rate=25" 660
enc clip-c.ts "mandelbrot=size=640x360:rate=25" 880
ls -l clip-*.ts
