package main

import (
	"os"
	"testing"
)

// TestMain runs the tests without the operator's $VODCTL_* settings: the
// tests give vodctl their own manager, token and TLS (with VODCTL_TLS=true
// in the shell, 16 of them dialed their plaintext managers with TLS).
func TestMain(m *testing.M) {
	for _, k := range []string{"VODCTL_MANAGER", "VODCTL_TOKEN", "VODCTL_TLS", "VODCTL_TLS_CA"} {
		os.Unsetenv(k)
	}
	os.Exit(m.Run())
}
