package vodnode

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/proto/grpctls/grpctlstest"
	pb "vodcluster/proto/vodcluster/v1"
)

// TestRTSPSPlayerPausedWithoutPAUSE is TestTCPPlayerPausedWithoutPAUSE
// over RTSPS: a player that stops reading its TLS connection without a
// PAUSE, its host alive, keeps its session, its stream waiting at the
// position and the session reported paused, and plays on from there
// when it reads again. (Its stream was ended as a slow client, the TLS
// write in flight given up 10 s after it began, and its silent session
// timed out: the node could not tell it from a slow one.)
func TestRTSPSPlayerPausedWithoutPAUSE(t *testing.T) {
	o := newFakeOrigin(t)
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-001"], 6) // as tcpPlayerAt20k
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	_, cfg, cliCfg := grpctlstest.TLS(t, "127.0.0.1")
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.RTSPTLS, n.RTSPSListen = cfg, "127.0.0.1:0"
		n.rtspQueue, n.rtspSendBuffer = 64<<10, 64<<10
		pausedWithoutPAUSETimes(n)
	})
	cliCfg.ServerName = "127.0.0.1"
	tc := tls.Client(dialRcvbuf(t, n.RTSPSAddr(), 8<<10), cliCfg)
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS to the node: %v", err)
	}
	tc.SetDeadline(time.Time{})
	c := &testClient{t: t, c: tc, br: bufio.NewReader(tc)}
	url := "rtsps://" + n.RTSPSAddr() + "/s/" + mint(t, "box-paused", "long-001", "node-1", "", time.Minute) + "/vod/long-001"
	sess := playTo20k(t, c, url)
	playerPausedWithoutPAUSE(t, n, m, c, url, sess)
}
