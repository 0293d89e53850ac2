// Package redistest starts a real redis-server for tests: a throwaway
// instance on a free loopback port, without persistence, stopped when the
// test ends.
package redistest

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RequireEnv is the environment variable that, when set to anything,
// turns a missing redis-server binary into a test failure instead of a
// skip.
const RequireEnv = "VODCLUSTER_REQUIRE_REDIS"

// Server is a redis-server process started by Start.
type Server struct {
	// Addr is the server's host:port on 127.0.0.1.
	Addr string
	// TLS is the client configuration of a server started by StartTLS
	// (trusting its test CA), nil otherwise.
	TLS *tls.Config
	// CAFile is the PEM file of that test CA ("" without TLS).
	CAFile string

	cmd      *exec.Cmd
	out      *syncBuffer
	done     chan struct{}
	password string // --requirepass, for the PING and Client
}

func passwordOf(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--requirepass" {
			return args[i+1]
		}
	}
	return ""
}

// Start runs redis-server on a free 127.0.0.1 port with no persistence
// (--save "" --appendonly no, its directory a temporary one), waits until
// it answers PING (10 s at most) and kills it in t's Cleanup. Without the
// redis-server binary it skips t, or fails it when RequireEnv is set.
// args are more redis-server options ("--requirepass", "secret").
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	return startServer(t, nil, args)
}

func startServer(t testing.TB, tlsFiles *tlsFiles, args []string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("redis-server not found and %s is set: %v", RequireEnv, err)
		}
		t.Skipf("redis-server not installed (apt-get install redis-server; set %s=1 to make this a failure)", RequireEnv)
	}
	dir := t.TempDir()
	var last error
	// The port is free when picked but may be taken before redis-server
	// binds it: try a few.
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s, err := start(bin, dir, port, tlsFiles, args)
		if err == nil {
			t.Cleanup(s.stop)
			return s
		}
		last = err
	}
	t.Fatalf("redis-server did not start: %v", last)
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func start(bin, dir string, port int, tf *tlsFiles, args []string) (*Server, error) {
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), out: &syncBuffer{}, done: make(chan struct{})}
	ports := []string{"--port", strconv.Itoa(port)}
	if tf != nil {
		ports = []string{"--port", "0", "--tls-port", strconv.Itoa(port), "--tls-cert-file", tf.cert,
			"--tls-key-file", tf.key, "--tls-ca-cert-file", tf.ca, "--tls-auth-clients", "no"}
		s.TLS, s.CAFile = tf.client, tf.ca
	}
	s.cmd = exec.Command(bin, append(append(ports, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning"), args...)...)
	s.password = passwordOf(args)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.password, TLSConfig: s.TLS, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("exited: %s", s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("no PONG within 10s: %v; output: %s", err, s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Client returns a go-redis client of the server, closed in t's Cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.password, TLSConfig: s.TLS})
	t.Cleanup(func() { c.Close() })
	return c
}

// Pause stops the server's process (SIGSTOP): it stays alive, its port
// open and its connections accepted by the kernel, but it answers
// nothing, as a Redis stalled (swapping, a long fork, a frozen VM) or
// behind a network black hole. t's Cleanup resumes it (Resume), so that
// no process is left stopped; Resume resumes it earlier. Where processes
// cannot be stopped by a signal (not Unix) it skips t.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	if sigStop == nil {
		t.Skip("no SIGSTOP on this system")
	}
	t.Cleanup(s.Resume)
	if err := s.cmd.Process.Signal(sigStop); err != nil {
		t.Fatalf("redis-server: SIGSTOP: %v", err)
	}
}

// Resume lets a paused server run again (SIGCONT); resuming a server that
// runs, or one that exited, does nothing.
func (s *Server) Resume() {
	select {
	case <-s.done:
		return
	default:
	}
	if sigCont != nil {
		_ = s.cmd.Process.Signal(sigCont)
	}
}

// Stop kills the server (as a crash would) and waits for it to exit;
// stopping twice is not an error.
func (s *Server) Stop() { s.stop() }

func (s *Server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// syncBuffer is a bytes.Buffer safe for the process's writers and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
