package deliver

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestSeekIntoFillingPartFillFailsPastSeek: an MP2T PLAY into the part
// not filled yet, which the fill then indexed past (but not the keyframe
// after the seek, so the stream still waits, seekSettled) before it
// failed, plays from the keyframe at or before the seek to where the fill
// stopped, as an elementary-stream one does (seekIndexed). It ended at
// once with a BYE, sending nothing, whenever the offset the bitrate gave
// for the seek lay past the bytes the fill left: a title whose announced
// bitrate is above its real one.
func TestSeekIntoFillingPartFillFailsPastSeek(t *testing.T) {
	e := startEngine(t, false)
	data, full, _, _ := sampleKeyframeBefore(t)
	size, target, early, _ := earlySeek(t, data)
	src := newFillingSource(data)
	src.reveal(int(early)) // the seek is past the npt indexed: estimated
	srv, cli := tcpPair(t)
	ended := make(chan EndReason, 1)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), SSRC: 7,
		Bitrate: 3 * full.Bitrate(), OnEnd: func(r EndReason, _ error) { ended <- r }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Play(target); err != nil {
		t.Fatal(err)
	}
	src.reveal(size)
	src.awaitWaitPast(t, int64(size)-1)
	src.fail(errors.New("origin gone"))
	media, _, _ := readFrames(t, cli, 2*PayloadSize, 5*time.Second)
	for i := 0; i+TSPacketSize <= len(media); i += TSPacketSize {
		p := media[i : i+TSPacketSize]
		if pid := uint16(p[1]&0x1f)<<8 | uint16(p[2]); pid != full.VideoPID {
			continue
		}
		if !bytes.Equal(p, data[early:early+TSPacketSize]) {
			t.Fatalf("the first video packet after the seek to %.3f s is not the keyframe at offset %d", target, early)
		}
		select {
		case r := <-ended:
			t.Fatalf("ended (%s) while it plays what the fill left", r)
		default:
		}
		return
	}
	t.Fatal("no video packet after the seek")
}
