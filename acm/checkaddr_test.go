package acm

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A node's address that means every address, in any spelling, is refused
// naming the node's setting that fixes it; "[0:0:0:0:0:0:0:0]:8555" and
// "[::0]:8555" were taken, and viewers would have been sent there.
func TestCheckAddrRefusesEveryAddress(t *testing.T) {
	for _, a := range []string{"[::]:8555", "0.0.0.0:8555", "[0:0:0:0:0:0:0:0]:8555", "[::0]:8555", ":8555", "vod-01", "vod-01:"} {
		err := checkAddr("rtsp_addr", a)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "advertise_host") {
			t.Errorf("%q: %v", a, err)
		}
	}
	for _, a := range []string{"192.0.2.7:8555", "[2001:db8::7]:8555", "vod-01.example.net:8555", "127.0.0.1:8555"} {
		if err := checkAddr("rtsp_addr", a); err != nil {
			t.Errorf("%q refused: %v", a, err)
		}
	}
}

// A host no client can reach or a port that is no port is refused too,
// the address shortened in the answer: a 10 kB host and a port "abc"
// were taken, and viewers would have been redirected there.
func TestCheckAddrRefusesUnreachable(t *testing.T) {
	long := strings.Repeat("a", 10_000)
	for _, a := range []string{long + ":8555", "vod-01:abc", "vod-01:0", "vod-01:99999", "vod-01:-1", "vod-01:+80",
		"vod 01:8555", "vod-01..example:8555", "-vod:8555", "vod-:8555", strings.Repeat("a", 64) + ".example:8555",
		strings.Repeat("abcdefgh.", 29) + "net:8555"} {
		err := checkAddr("rtsp_addr", a)
		if status.Code(err) != codes.InvalidArgument || len(err.Error()) > 400 {
			t.Errorf("%.40q: %.200v", a, err)
		}
	}
	for _, a := range []string{"[fe80::1%eth0]:8555", "vod_01.lan:8555", "vod-01.example.net.:8555", "localhost:65535", "10.0.0.1:1"} {
		if err := checkAddr("rtsp_addr", a); err != nil {
			t.Errorf("%q refused: %v", a, err)
		}
	}
}
