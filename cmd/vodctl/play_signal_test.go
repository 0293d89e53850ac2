package main

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/description"
	"github.com/bluenviron/gortsplib/v4/pkg/format"
	"github.com/pion/rtp"

	"vodcluster/cdp/samples"
	"vodcluster/cmd/internal/probe"
)

// tsServer is an RTSP server (gortsplib) that plays one MPEG-TS stream,
// a sample clip in a loop, to every client, and records the requests'
// methods.
type tsServer struct {
	srv      *gortsplib.Server
	stream   *gortsplib.ServerStream
	mu       sync.Mutex
	asked    []base.Method
	played   chan struct{} // closed at the first PLAY
	teardown chan struct{} // closed at the first TEARDOWN
	once     sync.Once
	tdOnce   sync.Once
}

func (s *tsServer) methods() []base.Method {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]base.Method(nil), s.asked...)
}

func (s *tsServer) OnRequest(_ *gortsplib.ServerConn, r *base.Request) {
	s.mu.Lock()
	s.asked = append(s.asked, r.Method)
	s.mu.Unlock()
	if r.Method == base.Teardown {
		s.tdOnce.Do(func() { close(s.teardown) })
	}
}

func (s *tsServer) OnDescribe(*gortsplib.ServerHandlerOnDescribeCtx) (*base.Response, *gortsplib.ServerStream, error) {
	return &base.Response{StatusCode: base.StatusOK}, s.stream, nil
}

func (s *tsServer) OnSetup(*gortsplib.ServerHandlerOnSetupCtx) (*base.Response, *gortsplib.ServerStream, error) {
	return &base.Response{StatusCode: base.StatusOK}, s.stream, nil
}

func (s *tsServer) OnPlay(*gortsplib.ServerHandlerOnPlayCtx) (*base.Response, error) {
	s.once.Do(func() { close(s.played) })
	return &base.Response{StatusCode: base.StatusOK}, nil
}

// startTSServer serves clip-a.ts over RTSP (TCP) on loopback, about 4
// times real time, until the test ends; it returns the server and its
// address.
func startTSServer(t *testing.T) (*tsServer, string) {
	t.Helper()
	return startTSServerAt(t, "127.0.0.1:0")
}

// startTSServerAt is startTSServer listening on listen ("[::1]:0" for
// IPv6 loopback; the test is skipped when that cannot be listened on).
func startTSServerAt(t *testing.T, listen string) (*tsServer, string) {
	t.Helper()
	clip, err := fs.ReadFile(samples.FS(), "clip-a.ts")
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		t.Skipf("listen on %s: %v", listen, err)
	}
	s := &tsServer{played: make(chan struct{}), teardown: make(chan struct{})}
	s.srv = &gortsplib.Server{Handler: s, RTSPAddress: lis.Addr().String(),
		Listen: func(string, string) (net.Listener, error) { return lis, nil }}
	if err := s.srv.Start(); err != nil {
		t.Fatal(err)
	}
	medi := &description.Media{Type: description.MediaTypeVideo, Formats: []format.Format{&format.MPEGTS{}}}
	s.stream = &gortsplib.ServerStream{Server: s.srv, Desc: &description.Session{Medias: []*description.Media{medi}}}
	if err := s.stream.Initialize(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		const chunk = 7 * 188
		tick := time.NewTicker(2 * time.Millisecond) // ~5 Mbit/s: the clip is 0.6 Mbit/s
		defer tick.Stop()
		seq, off := uint16(0), 0
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if off+chunk > len(clip) {
				off = 0
			}
			seq++
			s.stream.WritePacketRTP(medi, &rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 33, SequenceNumber: seq,
				Timestamp: uint32(seq) * 180}, Payload: clip[off : off+chunk]})
			off += chunk
		}
	}()
	t.Cleanup(func() {
		close(done)
		wg.Wait()
		s.stream.Close()
		s.srv.Close()
	})
	return s, lis.Addr().String()
}

// SIGTERM or Ctrl-C's SIGINT during vodctl play ends the play as its
// --duration would: TEARDOWN to the server, and the report printed. It
// killed vodctl, which printed nothing and sent no TEARDOWN: a UDP
// viewer's session stayed on its node, its reservation held and one of
// the subscriber's sessions taken, until session_timeout. vodctl then
// ends with 128 + the signal's number, 130 or 143: it exited 0, and a
// script could not tell a play cut short from a whole one.
func TestPlayStopsOnSignal(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGTERM, "SIGTERM", 143}, {syscall.SIGINT, "SIGINT", 130}} {
		t.Run(c.name, func(t *testing.T) {
			s, addr := startTSServer(t)
			cmd := newRoot()
			var out strings.Builder
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs([]string{"play", "--duration", "60s", "rtsp://demo:demo@" + addr + "/vod/sample-001"})
			type result struct {
				err error
				at  time.Time
			}
			ran := make(chan result, 1)
			go func() {
				err := cmd.Execute()
				ran <- result{err, time.Now()}
			}()
			select {
			case <-s.played:
			case r := <-ran:
				t.Fatalf("play ended before PLAY: %v\n%s", r.err, out.String())
			case <-time.After(10 * time.Second):
				t.Fatal("no PLAY within 10 s")
			}
			// Media flows (the report has frames): 200 kB sent, a third of a
			// second at the server's rate.
			for deadline := time.Now().Add(10 * time.Second); s.stream.Stats().BytesSent < 200_000; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d bytes sent in 10 s", s.stream.Stats().BytesSent)
				}
			}
			sent := time.Now()
			if err := syscall.Kill(syscall.Getpid(), c.sig); err != nil {
				t.Fatal(err)
			}
			var r result
			select {
			case r = <-ran:
			case <-time.After(15 * time.Second):
				t.Fatalf("play still running 15 s after %s", c.name)
			}
			var ee *exitError
			if d := r.at.Sub(sent); !errors.As(r.err, &ee) || ee.code != c.code || d > 5*time.Second ||
				r.err.Error() != "play interrupted by "+c.name+": the report is of the part played" {
				t.Fatalf("play after %s: %v (exit status %v), %v later; want exit status %d\n%s", c.name, r.err, ee, d, c.code, out.String())
			}
			if !strings.HasPrefix(out.String(), "played rtsp://demo:xxxxx@"+addr+"/vod/sample-001 from "+addr+": ") {
				t.Fatalf("no report:\n%s", out.String())
			}
			select {
			case <-s.teardown:
			case <-time.After(5 * time.Second):
				t.Fatalf("no TEARDOWN: %v", s.methods())
			}
		})
	}
}

// A signal before the server answered PLAY (a DESCRIBE the front door's
// admission queue holds, a server that does not answer) stops vodctl
// play at once, saying nothing was played, with exit status 143: the signal was caught and
// the play went on waiting for the answer, up to the client's 10 s read
// timeout, and then set up and played a session only to tear it down.
func TestPlaySignalBeforePlayStopsAtOnce(t *testing.T) {
	addr, asked := serveSilent(t)
	cmd := newRoot()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"play", "--duration", "60s", "rtsp://demo:demo@" + addr + "/vod/sample-001"})
	ran := make(chan error, 1)
	go func() { ran <- cmd.Execute() }()
	select {
	case <-asked:
	case err := <-ran:
		t.Fatalf("play ended before its first request: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no request within 10 s")
	}
	sent := time.Now()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ran:
		var ee *exitError // exit status 143, as a play SIGTERM ended later
		if d := time.Since(sent); err == nil || !strings.HasPrefix(err.Error(), "interrupted before the play began, nothing played: stopped before PLAY's answer (terminated signal received): DESCRIBE: ") ||
			strings.Contains(err.Error(), "probe:") ||
			!errors.Is(err, probe.ErrStopped) || !errors.As(err, &ee) || ee.code != 143 ||
			d > 3*time.Second {
			t.Fatalf("play after SIGTERM before PLAY: %v, %v later\n%s", err, d, out.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("play still running 15 s after SIGTERM")
	}
}

// vodctl play leaves no goroutine behind (its signal watch, the client's
// and the demultiplexer's end with it): after a first play (which starts
// os/signal's own loop for good), three more leave the count as it was.
func TestPlayLeavesNoGoroutine(t *testing.T) {
	_, addr := startTSServer(t)
	play := func() {
		cmd := newRoot()
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs([]string{"play", "--duration", "200ms", "rtsp://demo:demo@" + addr + "/vod/sample-001"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
	}
	// settled is the count once at most max, or the same for 200 ms, or
	// after 3 s.
	settled := func(max int) int {
		n, same := runtime.NumGoroutine(), 0
		for deadline := time.Now().Add(3 * time.Second); n > max && same < 10 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			if m := runtime.NumGoroutine(); m == n {
				same++
			} else {
				n, same = m, 0
			}
		}
		return n
	}
	play()
	before := settled(0)
	for i := 0; i < 3; i++ {
		play()
	}
	if n := settled(before); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after 3 plays, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// serveSilent serves one RTSP client that is never answered: it reads the
// first request line, says so on asked, and reads on until the client
// closes (or serveOnce's 5 s). It returns the address.
func serveSilent(t *testing.T) (addr string, asked <-chan struct{}) {
	t.Helper()
	got := make(chan struct{}, 1)
	addr = serveOnce(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
		got <- struct{}{}
		io.Copy(io.Discard, c) // no answer, until vodctl closes (or 5 s)
	})
	return addr, got
}
