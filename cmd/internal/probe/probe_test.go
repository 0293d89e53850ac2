package probe

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Bad options are refused before any connection (port 1 on loopback would
// refuse it anyway, with another error).
func TestPlayRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{{Duration: -time.Second}, {Transport: "sctp"}} {
		_, err := Play(context.Background(), "rtsp://127.0.0.1:1/vod/x", o)
		if err == nil || strings.Contains(err.Error(), "dial") {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	if _, err := PlayContext("rtsp://127.0.0.1:1/vod/x", Options{Duration: -time.Second}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("PlayContext with a negative duration: %v", err)
	}
}
