package probe

import (
	"context"
	"testing"
	"time"
)

// A negative play duration is quoted as vodctl's flag takes it ("-1h"),
// not in Go's form ("-1h0m0s"), and nothing is dialled.
func TestPlayNegativeDurationWritten(t *testing.T) {
	_, err := Play(context.Background(), "rtsp://127.0.0.1:1/vod/t1", Options{Duration: -time.Hour})
	if err == nil || err.Error() != "probe: duration -1h is negative (0 plays to the end)" {
		t.Fatalf("duration -1h: %v", err)
	}
}
