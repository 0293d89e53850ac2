package grpctls

import "testing"

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9090": true, "127.8.9.10:1": true, "[::1]:9090": true, "[::1%lo]:9090": true,
		"[::ffff:127.0.0.1]:9090": true, "localhost:9090": true,
		":9090": false, "0.0.0.0:9090": false, "[::]:9090": false, "10.0.0.1:9090": false,
		"[::ffff:10.0.0.1]:9090": false, "manager.example:9090": false, "127.0.0.1": false, "": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
