//go:build !linux

package vodnode

import "net"

// unackedBytes is not known off Linux: false (see tcpqueue_linux.go).
func unackedBytes(nc net.Conn) (int64, bool) { return 0, false }

// peerReset is not known off Linux: false (see tcpqueue_linux.go).
func peerReset(nc net.Conn) bool { return false }
