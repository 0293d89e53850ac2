//go:build linux

package vodnode

import (
	"crypto/tls"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unackedBytes returns the bytes nc's socket holds that its peer has not
// acknowledged: written and not sent yet, or sent and not acknowledged
// (SIOCOUTQ, tcp(7)); over TLS its records' overhead with them. False
// when nc is not a socket or the kernel does not say.
func unackedBytes(nc net.Conn) (int64, bool) {
	rc, ok := rawConn(nc)
	if !ok {
		return 0, false
	}
	var q int
	var qerr error
	if err := rc.Control(func(fd uintptr) { q, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || qerr != nil {
		return 0, false
	}
	return int64(q), true
}

// peerReset reports whether nc's TCP connection was reset (its state
// TCP_CLOSE, tcp(7): the peer closed it with bytes unread, or it was
// aborted), so that what its socket held unacknowledged will never be
// delivered. False when nc is not a socket or the kernel does not say.
func peerReset(nc net.Conn) bool {
	rc, ok := rawConn(nc)
	if !ok {
		return false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		return false
	}
	return info.State == unix.BPF_TCP_CLOSE
}

// rawConn returns the socket under nc (a TLS connection's too); false
// when nc is not a socket.
func rawConn(nc net.Conn) (syscall.RawConn, bool) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}
