package tsindex

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func loadSample(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../samples/clip-a.ts")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIndexSample(t *testing.T) {
	data := loadSample(t)
	x, err := BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if x.Size != int64(len(data)) {
		t.Fatalf("size %d, want %d", x.Size, len(data))
	}
	if x.VideoPID == 0 || x.PMTPID == 0 || x.PCRPID == 0 {
		t.Fatalf("pids not found: %+v", x)
	}
	if d := x.Duration(); math.Abs(d-20) > 0.5 {
		t.Fatalf("duration %.3f s, want about 20", d)
	}
	if br := x.Bitrate(); br < 500_000 || br > 700_000 {
		t.Fatalf("bitrate %d bit/s, want about 600k", br)
	}
	// one keyframe per second (GOP 25 at 25 fps)
	if n := len(x.Keyframes); n < 19 || n > 21 {
		t.Fatalf("%d keyframes, want 20", n)
	}
	k := x.KeyframeAt(5.5)
	if k < 0 {
		t.Fatal("no keyframe before 5.5 s")
	}
	if s := x.KeyframeSeconds(k); s > 5.5 || s < 4.5 {
		t.Fatalf("keyframe before 5.5 s is at %.3f s", s)
	}
	if x.KeyframeAt(-1) != -1 {
		t.Fatal("keyframe before the start")
	}
}

// KeyframeAt takes t to the nearest 90 kHz tick: 1.001 s (a keyframe at
// 29.97 fps) times 90000 is 90089.99…, which truncated fell before it.
func TestKeyframeAtExactTimes(t *testing.T) {
	x := &Index{FirstPTS: 0}
	for k := range 20 {
		x.Keyframes = append(x.Keyframes, Keyframe{Offset: int64(k) * PacketSize, PTS: int64(k) * 90090})
	}
	for k := range x.Keyframes {
		at := float64(k) * 1.001
		if got := x.KeyframeAt(at); got != k {
			t.Errorf("KeyframeAt(%g) = %d, want %d", at, got, k)
		}
		// 1.0005 s answered "1.000" names keyframe 1, as at a node
		// (deliver's nptSlack).
		if got := x.KeyframeAt(at - 0.0004); got != k {
			t.Errorf("KeyframeAt(%g) = %d, want %d (within half a millisecond)", at-0.0004, got, k)
		}
		if got := x.KeyframeAt(at - 0.0006); got != k-1 {
			t.Errorf("KeyframeAt(%g) = %d, want %d", at-0.0006, got, k-1)
		}
	}
}

func TestIncrementalEqualsWhole(t *testing.T) {
	data := loadSample(t)
	whole, _ := BuildFrom(bytes.NewReader(data))
	b := NewBuilder()
	for i := 0; i < len(data); i += 1000 { // not aligned on packets
		end := min(i+1000, len(data))
		if _, err := b.Write(data[i:end]); err != nil {
			t.Fatal(err)
		}
	}
	got := b.Index()
	if len(got.PCRs) != len(whole.PCRs) || len(got.Keyframes) != len(whole.Keyframes) || got.Size != whole.Size {
		t.Fatalf("incremental %d pcr %d kf %d bytes, whole %d %d %d",
			len(got.PCRs), len(got.Keyframes), got.Size, len(whole.PCRs), len(whole.Keyframes), whole.Size)
	}
}

func TestClockAtMonotonic(t *testing.T) {
	x, _ := BuildFrom(bytes.NewReader(loadSample(t)))
	prev := int64(math.MinInt64)
	for off := int64(0); off < x.Size; off += PacketSize * 50 {
		c, ok := x.ClockAt(off)
		if !ok || c < prev {
			t.Fatalf("clock at %d = %d after %d", off, c, prev)
		}
		prev = c
	}
}

func TestNotTS(t *testing.T) {
	b := NewBuilder()
	_, err := b.Write(bytes.Repeat([]byte{0x11}, 400))
	if !errors.Is(err, ErrNotTS) {
		t.Fatalf("err %v, want ErrNotTS", err)
	}
}

func TestPCRWrap(t *testing.T) {
	b := NewBuilder()
	mk := func(base int64) []byte {
		p := make([]byte, PacketSize)
		p[0], p[1], p[2], p[3] = 0x47, 0x01, 0x00, 0x20 // PID 256, adaptation only
		p[4], p[5] = 183, 0x10
		p[6] = byte(base >> 25)
		p[7] = byte(base >> 17)
		p[8] = byte(base >> 9)
		p[9] = byte(base >> 1)
		p[10] = byte(base<<7) | 0x7e
		return p
	}
	max := int64(1)<<33 - 90000
	b.Write(mk(max))
	b.Write(mk(0))
	x := b.Index()
	if len(x.PCRs) != 2 || x.PCRs[1].PCR <= x.PCRs[0].PCR {
		t.Fatalf("wrap not unwrapped: %+v", x.PCRs)
	}
	if d := x.PCRs[1].PCR - x.PCRs[0].PCR; d != 90000*300 {
		t.Fatalf("delta %d, want 1 s", d)
	}
}

func FuzzBuilder(f *testing.F) {
	f.Add(loadSample(f)[:PacketSize*20])
	f.Fuzz(func(t *testing.T, data []byte) {
		b := NewBuilder()
		b.Write(data)
		x := b.Index()
		for i := 1; i < len(x.PCRs); i++ {
			if x.PCRs[i].PCR < x.PCRs[i-1].PCR {
				t.Fatalf("the clock goes back at PCR %d: %d after %d", i, x.PCRs[i].PCR, x.PCRs[i-1].PCR)
			}
		}
		x.Duration()
		x.Bitrate()
		x.ClockAt(0)
		x.KeyframeAt(1)
	})
}

// pcrPackets returns the offsets of the packets of data that carry a PCR.
func pcrPackets(data []byte) []int {
	var at []int
	for off := 0; off+PacketSize <= len(data); off += PacketSize {
		p := data[off:]
		if p[3]&0x20 != 0 && p[4] >= 7 && p[5]&0x10 != 0 {
			at = append(at, off)
		}
	}
	return at
}

// TestPCRDiscontinuitiesAbsorbed: a PCR that leaps hours ahead (damaged
// bytes) and a splice whose PCRs start again from the first title's leave
// the index's clock continuous, at the stream's rate: nothing for a
// pacer to wait hours for or to rush through.
func TestPCRDiscontinuitiesAbsorbed(t *testing.T) {
	sample := loadSample(t)
	clean, _ := BuildFrom(bytes.NewReader(sample))
	if clean.PCRJumps != 0 {
		t.Fatalf("the sample has %d PCR jumps, want 0", clean.PCRJumps)
	}
	damaged := bytes.Clone(sample)
	pcrs := pcrPackets(damaged)
	at := pcrs[len(pcrs)/2]
	setPCR(damaged, at, 34632*90000) // 34632 s: the PCR the operator trial's damaged bytes read as
	spliced := append(bytes.Clone(sample), sample...)
	for _, c := range []struct {
		name  string
		data  []byte
		jumps int
		dur   float64
	}{
		{"a PCR hours ahead", damaged, 2, clean.Duration()},
		{"a splice", spliced, 1, 2 * clean.Duration()},
	} {
		x, err := BuildFrom(bytes.NewReader(c.data))
		if err != nil {
			t.Fatal(err)
		}
		if x.PCRJumps != c.jumps {
			t.Errorf("%s: %d PCR jumps, want %d", c.name, x.PCRJumps, c.jumps)
		}
		for i := 1; i < len(x.PCRs); i++ {
			if step := x.PCRs[i].PCR - x.PCRs[i-1].PCR; step <= 0 || step > MaxPCRStep {
				t.Fatalf("%s: the clock steps %d ticks at offset %d", c.name, step, x.PCRs[i].Offset)
			}
		}
		if d := x.Duration(); math.Abs(d-c.dur) > 0.5 {
			t.Errorf("%s: duration %.3f s, want about %.3f", c.name, d, c.dur)
		}
		if br := x.Bitrate(); math.Abs(float64(br-clean.Bitrate())) > 0.05*float64(clean.Bitrate()) {
			t.Errorf("%s: bitrate %d bit/s, want about %d", c.name, br, clean.Bitrate())
		}
	}
}

// TestPTSDiscontinuitiesAbsorbed: a splice whose presentation times start
// again from the first title's leaves the keyframes' times (Keyframe.Time)
// continuous, so that a seek past it lands where the viewer asked and the
// HLS segments after it keep their length; the PTS themselves stay the
// stream's (RTP timestamps follow them). A PCR leaping ahead (damaged
// bytes) moves no presentation time. An index saved before the jumps
// were absorbed is not Continuous: built again.
func TestPTSDiscontinuitiesAbsorbed(t *testing.T) {
	sample := loadSample(t)
	clean, _ := BuildFrom(bytes.NewReader(sample))
	if len(clean.PTSJumps) != 0 || !clean.Continuous() {
		t.Fatalf("the sample: %d PTS jumps, continuous %v; want 0, true", len(clean.PTSJumps), clean.Continuous())
	}
	damaged := bytes.Clone(sample)
	pcrs := pcrPackets(damaged)
	at := pcrs[len(pcrs)/2]
	setPCR(damaged, at, 34632*90000)
	if x, _ := BuildFrom(bytes.NewReader(damaged)); len(x.PTSJumps) != 0 {
		t.Errorf("a PCR hours ahead: %d PTS jumps, want 0", len(x.PTSJumps))
	}

	x, err := BuildFrom(bytes.NewReader(append(bytes.Clone(sample), sample...)))
	if err != nil {
		t.Fatal(err)
	}
	if len(x.PTSJumps) != 1 || !x.Continuous() {
		t.Fatalf("a splice: %d PTS jumps, continuous %v; want 1, true", len(x.PTSJumps), x.Continuous())
	}
	half := int64(len(sample))
	second := -1 // the second part's first keyframe
	for i, k := range x.Keyframes {
		if i > 0 && k.Time() <= x.Keyframes[i-1].Time() {
			t.Fatalf("keyframe %d at %d ticks after %d: its time goes back", i, k.Time(), x.Keyframes[i-1].Time())
		}
		if k.Offset >= half && second < 0 {
			second = i
		}
		if k.PTS != clean.Keyframes[i%len(clean.Keyframes)].PTS {
			t.Fatalf("keyframe %d: PTS %d, want the stream's %d", i, k.PTS, clean.Keyframes[i%len(clean.Keyframes)].PTS)
		}
	}
	if s := x.KeyframeSeconds(second); math.Abs(s-clean.Duration()) > 0.6 {
		t.Errorf("the second part's first keyframe at npt %.3f s, want about %.3f", s, clean.Duration())
	}
	k := x.KeyframeAt(25.5)
	if k < 0 || x.Keyframes[k].Offset < half || x.KeyframeSeconds(k) > 25.5 || x.KeyframeSeconds(k) < 24.4 {
		t.Errorf("seek to 25.5 s: keyframe %d at offset %d, npt %.3f; want one of the second part at 24.5 to 25.5 s", k, x.Keyframes[max(k, 0)].Offset, x.KeyframeSeconds(max(k, 0)))
	}
	old := *x
	old.Keyframes = nil
	for _, k := range x.Keyframes {
		k.Jump = 0
		old.Keyframes = append(old.Keyframes, k)
	}
	if old.Continuous() {
		t.Error("an index with the splice's PTS not absorbed is taken as continuous")
	}
}

// setPCR writes a PCR of base (90 kHz ticks) into the packet at offset at
// of data, which carries one.
func setPCR(data []byte, at int, base int64) {
	data[at+6], data[at+7], data[at+8], data[at+9] = byte(base>>25), byte(base>>17), byte(base>>9), byte(base>>1)
	data[at+10] = byte(base<<7) | 0x7e
}

// TestPTSJumpsAbsorbedOnlyWhereTheStreamJumps: no presentation-time jump
// is seen where the stream has none: a PCR a few seconds off (damaged
// bytes: the clock strays, the pictures' times do not) leaves every
// keyframe's npt as it was; and a splice whose times go back by only 2 s
// (a short intro) is absorbed, its keyframes' times still increasing.
func TestPTSJumpsAbsorbedOnlyWhereTheStreamJumps(t *testing.T) {
	sample := loadSample(t)
	clean, _ := BuildFrom(bytes.NewReader(sample))
	pcrs := pcrPackets(sample)
	for _, off := range []int64{5, -5, 9} {
		damaged := bytes.Clone(sample)
		at := pcrs[len(pcrs)/2]
		x0, _ := BuildFrom(bytes.NewReader(sample[:at+PacketSize]))
		setPCR(damaged, at, x0.PCRs[len(x0.PCRs)-1].PCR/300+off*90000)
		x, _ := BuildFrom(bytes.NewReader(damaged))
		if len(x.PTSJumps) != 0 {
			t.Errorf("a PCR %+d s off: PTS jumps %v, want none", off, x.PTSJumps)
		}
		for i := range x.Keyframes {
			if a, b := x.KeyframeSeconds(i), clean.KeyframeSeconds(i); math.Abs(a-b) > 0.001 {
				t.Fatalf("a PCR %+d s off: keyframe %d at npt %.3f, the clean title's at %.3f", off, i, a, b)
			}
		}
	}
	var intro []byte
	for _, at := range pcrs {
		if x, _ := BuildFrom(bytes.NewReader(sample[:at])); x.Duration() >= 2 {
			intro = sample[:at]
			break
		}
	}
	x, _ := BuildFrom(bytes.NewReader(append(bytes.Clone(intro), sample...)))
	if len(x.PTSJumps) != 1 {
		t.Fatalf("a 2 s intro spliced before the title: PTS jumps %v, want one", x.PTSJumps)
	}
	for i := 1; i < len(x.Keyframes); i++ {
		if x.Keyframes[i].Time() <= x.Keyframes[i-1].Time() {
			t.Fatalf("a 2 s intro spliced before the title: keyframe %d at %d ticks after %d", i, x.Keyframes[i].Time(), x.Keyframes[i-1].Time())
		}
	}
}

// TestNoPTSJumpsInEncodesWithBPictures: B-pictures move a picture's PTS
// from its decoding time by frames, which are seconds in a still-picture
// title at one frame a second (music with cover art): no jump is seen,
// and each keyframe's npt is its time; nor across the 33-bit wrap of the
// timestamps, where a B-picture decoded after the wrap is presented
// before it; nor is an index of them saved before Format 2 taken for
// one that may hold a jump. Encoded by ffmpeg.
func TestNoPTSJumpsInEncodesWithBPictures(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "cover.png")
	ffmpeg := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if b, err := exec.CommandContext(ctx, "ffmpeg", append([]string{"-loglevel", "error", "-y"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg: %v: %s", err, b)
		}
	}
	encode := func(name string, args ...string) []byte {
		t.Helper()
		out := filepath.Join(dir, name)
		ffmpeg(append(args, "-f", "mpegts", out)...)
		d, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ffmpeg("-f", "lavfi", "-i", "color=c=blue:s=160x120", "-frames:v", "1", img)
	for _, c := range []struct {
		name  string
		data  []byte
		every float64 // seconds between keyframes
	}{
		{"a still picture at 1 fps", encode("still.ts", "-loop", "1", "-framerate", "1", "-i", img, "-f", "lavfi", "-i", "sine", "-t", "40",
			"-c:v", "libx264", "-g", "10", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "256k"), 10},
		{"across the 33-bit wrap", encode("wrap.ts", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-t", "20",
			"-c:v", "libx264", "-bf", "3", "-g", "50", "-output_ts_offset", "95430"), 2},
	} {
		x, err := BuildFrom(bytes.NewReader(c.data))
		if err != nil {
			t.Fatal(err)
		}
		if len(x.PTSJumps) != 0 || len(x.Keyframes) < 4 {
			t.Errorf("%s: PTS jumps %v, %d keyframes; want none, and keyframes", c.name, x.PTSJumps, len(x.Keyframes))
		}
		if unabsorbed(x).MayHoldPTSJump() {
			t.Errorf("%s: its index saved before Format 2 flagged as holding a jump (read again for nothing)", c.name)
		}
		for i := range x.Keyframes {
			if s := x.KeyframeSeconds(i); math.Abs(s-float64(i)*c.every) > 0.05 {
				t.Errorf("%s: keyframe %d at npt %.3f, want %.3f", c.name, i, s, float64(i)*c.every)
			}
		}
	}
}
