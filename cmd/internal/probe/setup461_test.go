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
// drops the node's reason, given in the body).
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
	if want := "461 (Unsupported Transport): the server does not send the media over the transport asked (a node with tcp_only sends over TCP only); play over TCP"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("SETUP answered 461: %v\nwant %q", err, want)
	}
}
