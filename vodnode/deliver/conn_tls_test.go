package deliver

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"vodcluster/proto/grpctls/grpctlstest"
)

// tlsPair connects a loopback TLS pair (server side first); rcvbuf > 0
// keeps the client's receive window small, as tcpPairBuf.
func tlsPair(t *testing.T, rcvbuf int) (server *tls.Conn, client *tls.Conn) {
	t.Helper()
	_, srvCfg, cliCfg := grpctlstest.TLS(t, "127.0.0.1")
	cliCfg.ServerName = "127.0.0.1"
	s, c := tcpPairBuf(t, rcvbuf)
	server, client = tls.Server(s, srvCfg), tls.Client(c, cliCfg)
	errc := make(chan error, 1)
	go func() { errc <- server.Handshake() }()
	if err := client.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return server, client
}

// An RTSPS connection's writer never blocks the pacer: while the viewer
// does not read, TryWrite queues up to the limit and then refuses (the
// stream holds its media back); once the viewer reads, everything
// queued, and a response written meanwhile, arrives whole and in order.
func TestConnWriterTLSDoesNotBlockThePacer(t *testing.T) {
	srv, cli := tlsPair(t, 4096)
	const limit = 64 << 10
	w := NewConnWriter(srv, limit, 5*time.Second)
	defer w.Close()
	var sent bytes.Buffer
	chunk := make([]byte, 1400)
	refused := false
	for i := 0; i < 10_000 && !refused; i++ { // far more than the socket and the queue hold
		for k := range chunk {
			chunk[k] = byte(i + k)
		}
		ok, err := w.TryWrite(chunk)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			refused = true
			break
		}
		sent.Write(chunk)
	}
	if !refused {
		t.Fatalf("TryWrite took %d bytes without the viewer reading; want a refusal at the %d-byte queue limit", sent.Len(), limit)
	}
	if q := w.Queued(); q > limit {
		t.Fatalf("queued %d bytes, limit %d", q, limit)
	}
	// A response waits for the media queued before it, then is written.
	resp := []byte("RTSP/1.0 200 OK\r\nCSeq: 9\r\n\r\n")
	done := make(chan error, 1)
	go func() { _, err := w.Write(resp); done <- err }()
	want := append(sent.Bytes(), resp...)
	got := make([]byte, len(want))
	cli.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(cli, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes arrived out of order or changed")
	}
	if err := <-done; err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// A response to a viewer that never reads fails after the timeout (the
// connection is closed) rather than hanging; Close makes later writes fail.
func TestConnWriterTLSWriteTimesOut(t *testing.T) {
	srv, _ := tlsPair(t, 4096)
	w := NewConnWriter(srv, 0, 300*time.Millisecond)
	big := make([]byte, 8<<20) // more than any socket buffer holds
	if _, err := w.Write(big); err == nil {
		t.Fatal("Write to a viewer that does not read: no error")
	}
	w.Close()
	// TryWrite never waits for the writer's lock (the writer's goroutine
	// may hold it a moment longer): it refuses, with the error when it has
	// the lock, without one when it has not.
	if ok, _ := w.TryWrite([]byte("x")); ok {
		t.Fatal("TryWrite after Close: taken")
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, net.ErrClosed) && err == nil {
		t.Fatal("Write after Close: no error")
	}
	if ok, _ := w.TryWrite([]byte("x")); ok {
		t.Fatal("TryWrite after a Write failed: taken")
	}
}
