package acm

import (
	"net/url"
	"testing"
)

// TestRTSPDoor: the front door signed into a token is the viewer's
// request URL's scheme and authority, escaped again so that the node's
// Location parses (an IPv6 zone, unescaped by the URL parser, signed as
// it was, gave "rtsp://[fe80::1%eth0]:554", which no client parses);
// an authority unfit for a Location header gives none.
func TestRTSPDoor(t *testing.T) {
	for _, tc := range []struct {
		tls        bool
		host, want string
	}{
		{false, "127.0.0.1:8554", "rtsp://127.0.0.1:8554"},
		{true, "vod.example.net", "rtsps://vod.example.net"},
		{false, "[fe80::1%eth0]:554", "rtsp://[fe80::1%25eth0]:554"},
		{false, "", ""},
		{false, "h p", ""},
		{false, ":554", ""},
	} {
		got := rtspDoor(tc.tls, tc.host)
		if got != tc.want {
			t.Errorf("rtspDoor(%v, %q) = %q, want %q", tc.tls, tc.host, got, tc.want)
		}
		if got != "" {
			if _, err := url.Parse(got + "/vod/t1"); err != nil {
				t.Errorf("%q: its Location does not parse: %v", got, err)
			}
		}
	}
}
