package acm

import "testing"

// An RTSPS viewer goes to its node's RTSPS address, or to its plain one
// when the node has none; a plain viewer always to the plain one.
func TestGrantRTSPURL(t *testing.T) {
	with := &grant{RTSPAddr: "10.0.0.5:8555", RTSPSAddr: "vod-5.example.net:8323"}
	without := &grant{RTSPAddr: "10.0.0.6:8555"}
	for _, c := range []struct {
		g       *grant
		overTLS bool
		want    string
	}{
		{with, true, "rtsps://vod-5.example.net:8323"},
		{with, false, "rtsp://10.0.0.5:8555"},
		{without, true, "rtsp://10.0.0.6:8555"},
		{without, false, "rtsp://10.0.0.6:8555"},
	} {
		if got := c.g.rtspURL(c.overTLS); got != c.want {
			t.Errorf("%+v over TLS %v: %s, want %s", c.g, c.overTLS, got, c.want)
		}
	}
}
