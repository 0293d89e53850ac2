package vodnode

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"
)

// remuxTitle returns the MPEG-TS title data made over by ffmpeg: data is
// its first input (pipe:0, MPEG-TS), args its further inputs, maps, codecs
// and muxer options, and the output is MPEG-TS again. The test is skipped
// when ffmpeg is not installed and fails when ffmpeg fails, gives nothing
// or takes more than a minute.
func remuxTitle(t *testing.T, data []byte, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	full := append([]string{"-v", "error", "-f", "mpegts", "-i", "pipe:0"}, args...)
	full = append(full, "-f", "mpegts", "pipe:1")
	cmd := exec.CommandContext(ctx, "ffmpeg", full...)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// audioOnly returns the audio of the MPEG-TS title data alone, remuxed by
// ffmpeg (the PCR then on the audio PID), each frame placed 0.2 s before
// its time (not 0.7 to 0.9 s as by default): a radio programme, a title
// with no picture.
func audioOnly(t *testing.T, data []byte) []byte {
	t.Helper()
	return remuxTitle(t, data, "-map", "0:a", "-c", "copy", "-muxdelay", "0.2", "-muxpreload", "0.2")
}

// twoAudioTitle returns the sample title's video with two AAC tracks,
// told apart by tone, sample rate and language: a 440 Hz sine at 48 kHz
// ("eng") and a 1 kHz sine at 44.1 kHz ("fra"), as a film with two audio
// languages carries them.
func twoAudioTitle(t *testing.T, data []byte) []byte {
	t.Helper()
	return remuxTitle(t, data,
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=44100",
		"-map", "0:v", "-map", "1:a", "-map", "2:a", "-c:v", "copy", "-c:a", "aac", "-b:a", "64k", "-shortest",
		"-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra")
}
