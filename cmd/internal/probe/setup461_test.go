package probe

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A SETUP over UDP answered 461 by a node that sends over TCP only
// (tcp_only) is reported with what it means and what to do: the status
// line alone, "461 (Unsupported Transport)", said neither (the client
// drops the node's reason, given in the body). A SETUP over TCP answered
// 461 is not told to play over TCP, as it was.
func TestSetupRefusedForItsTransportExplained(t *testing.T) {
	const sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=t\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\nm=video 0 RTP/AVP 33\r\na=control:trackID=0\r\n"
	const reason = "this node sends the media over TCP only (RTP/AVP/TCP or MP2T/RTP/TCP, interleaved in the RTSP connection): ask for TCP"
	var n atomic.Int32
	addr := fakeRTSP(t, func(cseq string) string {
		if n.Add(1) == 1 { // DESCRIBE
			return "RTSP/1.0 200 OK\r\nCSeq: " + cseq + "\r\nContent-Type: application/sdp\r\nContent-Base: rtsp://127.0.0.1/vod/t/\r\nContent-Length: " +
				strconv.Itoa(len(sdp)) + "\r\n\r\n" + sdp
		}
		return "RTSP/1.0 461 Unsupported Transport\r\nCSeq: " + cseq + "\r\nContent-Type: text/plain\r\nContent-Length: " +
			strconv.Itoa(len(reason)+2) + "\r\n\r\n" + reason + "\r\n"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Play(ctx, "rtsp://"+addr+"/vod/t", Options{Transport: "udp"})
	if want := "461 (Unsupported Transport): the server does not send the media over UDP (a node with tcp_only, or one asked over RTSPS, sends over TCP only); play over TCP"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("SETUP over UDP answered 461: %v\nwant %q", err, want)
	}
	// Asked over TCP, the advice to play over TCP would be wrong.
	n.Store(0)
	_, err = Play(ctx, "rtsp://"+addr+"/vod/t", Options{Transport: "tcp"})
	if want := "461 (Unsupported Transport): the server does not send this media interleaved in the RTSP connection"; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "play over TCP") {
		t.Errorf("SETUP over TCP answered 461: %v\nwant %q and no advice to play over TCP", err, want)
	}
}
