package rtspwire

import "testing"

func TestAcceptsSDP(t *testing.T) {
	for _, c := range []struct {
		accept []string
		want   bool
	}{
		{nil, true},
		{[]string{""}, true},
		{[]string{"application/sdp"}, true}, // ffmpeg, GStreamer, live555
		{[]string{"application/sdp, application/rtsl, application/mheg"}, true}, // QuickTime
		{[]string{"Application/SDP;q=0.5"}, true},
		{[]string{"*/*"}, true},
		{[]string{"application/*"}, true},
		{[]string{"text/html"}, false},
		{[]string{"text/html", "text/plain"}, false},
		{[]string{"application/sdp;q=0"}, false},
		{[]string{"application/sdp;q=0, */*;q=0"}, false},
		{[]string{"text/*, application/json"}, false},
		// what does not parse is not a refusal
		{[]string{"sdp"}, true},
		{[]string{"text/html;q=x"}, true},
		{[]string{"text/html;q=2"}, true},
		{[]string{"text/html, ;;;"}, true},
		{[]string{"text/html;q=NaN"}, true},
		// the most specific range decides (RFC 9110 §12.5.1)
		{[]string{"application/sdp;q=0, */*"}, false},
		{[]string{"application/*;q=0, */*"}, false},
		{[]string{"application/sdp;q=0.1, application/*;q=0"}, true},
		{[]string{"application/*;q=0.5, */*;q=0"}, true},
	} {
		if got := AcceptsSDP(c.accept); got != c.want {
			t.Errorf("AcceptsSDP(%q) = %v, want %v", c.accept, got, c.want)
		}
	}
}
