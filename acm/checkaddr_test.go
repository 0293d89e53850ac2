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
