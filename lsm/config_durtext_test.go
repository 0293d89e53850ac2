package lsm

import (
	"testing"
	"time"
)

// A negative slow start is quoted as the configuration writes it
// ("-1m"), not in Go's form ("-1m0s").
func TestSlowStartNegativeWritten(t *testing.T) {
	c := DefaultConfig()
	c.SlowStart = -time.Minute
	if err := c.Validate(); err == nil || err.Error() != "lsm: slow start -1m < 0" {
		t.Fatalf("slow start -1m: %v", err)
	}
}
