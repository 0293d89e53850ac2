package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"vodcluster/acm"
	"vodcluster/acm/boss"
	"vodcluster/acm/store"
	"vodcluster/cdp/samples"
	"vodcluster/cmd/internal/durflag"
	"vodcluster/cmd/internal/probe"
	"vodcluster/lsm"
)

// Demo subscriber of `vodcluster up`, entitled to every title.
const (
	demoUser     = "demo"
	demoPassword = "demo"
)

func upCmd() *cobra.Command {
	var (
		opts         clusterOptions
		dataDir      string
		play         string
		playDuration = durflag.Value{D: 5 * time.Second}
		setupDelay   = durflag.Value{D: 200 * time.Millisecond}
		queueWait    = durflag.Value{D: 5 * time.Second}
		transport    string
		quiet        bool
		once         bool
		maxSessions  int
		maxRequests  int
		maxConns     int
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole cluster in one process on loopback: origin with sample titles, manager, nodes",
		Long: "up starts the origin (CDP) with the sample titles sample-001 ... sample-020, the manager\n" +
			"(front door on rtsp://127.0.0.1:8554 and http://127.0.0.1:8080, gRPC on 127.0.0.1:9090)\n" +
			"and three VOD nodes, with a demo subscriber demo/demo entitled to every title. It runs\n" +
			"until SIGINT, SIGTERM or SIGHUP. With --play it plays a title through the front door once the\n" +
			"cluster is up and prints what was received.\n\n" +
			"The demo subscriber may hold --max-sessions-per-user sessions at once (8, a household's\n" +
			"players; the manager's max_sessions_per_user): to try more viewers at a time, raise it\n" +
			"(-1: no cap), or the viewers past it get RTSP 403 / HTTP 429. A load generator playing\n" +
			"hundreds of viewers as demo from one address also meets --requests-per-user (20 requests\n" +
			"at once, then 2 a second: RTSP 503 / HTTP 429) and --max-conns-per-addr (256 open\n" +
			"connections): -1 lifts each.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Echoed as typed: a negative one was "-1m0s" for "-1m".
			for _, d := range []struct {
				name, zero string
				v          *durflag.Value
			}{{"origin-setup-delay", "", &setupDelay}, {"queue-deadline", "", &queueWait}, {"play-duration", " (0 plays to the end)", &playDuration}} {
				if d.v.D < 0 {
					return fmt.Errorf("up: --%s %s is negative%s", d.name, d.v, d.zero)
				}
			}
			opts.OriginSetupDelay, opts.QueueDeadline = setupDelay.D, queueWait.D
			opts.Host = unbracketHost(opts.Host)
			if err := checkUpFlags(opts, play, transport, once); err != nil {
				return err
			}
			if err := checkUpHost(opts.Host); err != nil {
				return err
			}
			if maxSessions == 0 || maxSessions < -1 {
				return fmt.Errorf("up: --max-sessions-per-user %d: want 1 or more, or -1 for no cap", maxSessions)
			}
			opts.MaxSessionsPerUser = maxSessions
			for _, f := range []struct {
				name string
				v    int
			}{{"requests-per-user", maxRequests}, {"max-conns-per-addr", maxConns}} {
				if f.v == 0 || f.v < -1 {
					return fmt.Errorf("up: --%s %d: want 1 or more, or -1 for no limit", f.name, f.v)
				}
			}
			opts.RequestsPerUser, opts.MaxConnsPerAddr = maxRequests, maxConns
			// A hangup (the terminal running make run closed) stops up as
			// Ctrl-C does: without a handler it killed the process, and
			// the temporary data directory, secrets included, stayed.
			// Under nohup (SIGHUP ignored) it keeps running. Caught from
			// before the directory is made: one while the cluster starts
			// (a second or more) stops it once started.
			stopOn := []os.Signal{os.Interrupt, syscall.SIGTERM}
			if !signal.Ignored(syscall.SIGHUP) {
				stopOn = append(stopOn, syscall.SIGHUP)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), stopOn...)
			defer stop()
			// A reader of up's output that exits (`vodcluster up | head
			// -2`) stops up as Ctrl-C does: the write to the broken pipe
			// killed the process (SIGPIPE), and the temporary data
			// directory stayed. Asked for, SIGPIPE kills no more and the
			// write fails with EPIPE (outputWatch); the signals themselves,
			// a viewer's closed connection's among them, are dropped.
			ctx, outGone := context.WithCancelCause(ctx)
			defer outGone(nil)
			sigpipe := make(chan os.Signal, 1)
			signal.Notify(sigpipe, syscall.SIGPIPE)
			defer signal.Stop(sigpipe)
			out := outputWatch{w: cmd.OutOrStdout(), gone: outGone}
			// With --once a temporary data directory is gone when up
			// returns: the banner names no file in it to use later.
			gone := once && dataDir == ""
			if dataDir == "" {
				d, cleanup, err := tempDataDir()
				if err != nil {
					return err
				}
				defer cleanup()
				dataDir = d
			} else if err := checkDataDir(dataDir); err != nil {
				return err
			}
			opts.DataDir = dataDir
			opts.PortalSecretFile = filepath.Join(dataDir, "portal-secret")
			opts.SessionRecordsFile = filepath.Join(dataDir, "sessions.jsonl")
			demo, err := boss.NewUser(demoUser, demoPassword, acm.DefaultRealm, []string{boss.AllPackages})
			if err != nil {
				return err
			}
			opts.Users = []boss.User{demo}
			logger := slog.Default()
			if quiet {
				logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			}
			opts.Logger = logger
			c, err := startCluster(opts)
			if err != nil {
				return namingDataDirInUse(namingListenFlag(err, opts), dataDir)
			}
			defer c.Close()

			wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			err = c.waitNodes(wctx, opts.Nodes)
			cancel()
			if ctx.Err() != nil { // a signal while the cluster started
				fmt.Fprintln(out, "shutting down")
				return outputClosed(ctx, c.Close())
			}
			if err != nil {
				return err
			}
			printBanner(out, c, dataDir, gone)
			if play != "" {
				u := fmt.Sprintf("rtsp://%s:%s@%s/vod/%s", demoUser, demoPassword, c.manager.RTSPAddr(), play)
				// Without the password, as the result line and vodctl
				// show a URL.
				fmt.Fprintf(out, "\nplaying %s %s with vodctl's probe client ...\n", probe.Redacted(u), playFor(playDuration.D))
				res, err := probe.Play(ctx, u, probe.Options{Transport: transport, Duration: playDuration.D})
				if err != nil {
					// As vodctl play words it: it said "probe: DESCRIBE: bad
					// status code: 453 (Not Enough Bandwidth)".
					err = probe.Explain(err, u, res.Server)
				}
				err = reportPlay(out, play, res, err, once, playDuration.D, opts.OriginSetupDelay)
				if once {
					if cerr := outputClosed(ctx, c.Close()); err == nil {
						err = cerr
					}
					return err
				}
			}
			fmt.Fprintln(out, "\ncluster is up; press Ctrl-C to stop")
			<-ctx.Done()
			fmt.Fprintln(out, "shutting down")
			return outputClosed(ctx, c.Close())
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "directory for all state, made when missing and refused at start when it is not a directory or not writable; its cdp/catalog.yaml, once there, is kept as edited (default: a fresh temporary directory, removed at exit)")
	f.StringVar(&opts.Host, "host", "127.0.0.1", "address every part listens on: one of this machine's (an IPv6 one with or without brackets: ::1 or [::1])")
	f.IntVar(&opts.RTSPPort, "rtsp-port", 8554, "front door RTSP port")
	f.IntVar(&opts.HTTPPort, "http-port", 8080, "front door HTTP port")
	f.IntVar(&opts.GRPCPort, "grpc-port", 9090, "manager gRPC port (vodctl --manager)")
	f.IntVar(&opts.MetricsPort, "metrics-port", 9464, "manager Prometheus /metrics port (the origin's and nodes' take free ports; -1: no metrics)")
	f.IntVar(&opts.Nodes, "nodes", 3, "number of VOD nodes")
	f.Int64Var(&opts.NodeEgress, "node-egress-bps", 100_000_000, "egress capacity per node, bit/s")
	f.Int64Var(&opts.NodeDisk, "node-disk-bytes", 16_000_000, "disk for titles per node, bytes (the 20 sample titles take about 30 MB)")
	f.StringVar(&opts.Policy, "policy", "", "scheduling policy (default lall)")
	f.Var(&setupDelay, "origin-setup-delay", "origin: setup delay per transfer")
	f.Int64Var(&opts.OriginRateBps, "origin-rate-bps", 8_000_000, "origin: rate per transfer, bit/s (0: unlimited)")
	f.IntVar(&opts.OriginMaxTransfers, "origin-channels", 4, "origin: concurrent transfers, each a fill (0: unlimited)")
	f.Var(&queueWait, "queue-deadline", "how long a request waits for a node before 453")
	f.StringVar(&play, "play", "", "play this title through the front door once up, and print what was received")
	f.Var(&playDuration, "play-duration", "how long --play plays (0 = to the end of the title)")
	f.StringVar(&transport, "transport", "tcp", "--play transport: tcp or udp")
	f.BoolVar(&quiet, "quiet", false, "no logs, only the banner and results")
	f.BoolVar(&once, "once", false, "with --play: stop the cluster after the play (exit status 1 when it failed)")
	f.IntVar(&maxSessions, "max-sessions-per-user", acm.DefaultMaxSessionsPerUser, "sessions the demo subscriber may hold at once (max_sessions_per_user; more viewers get RTSP 403 / HTTP 429); -1: no cap")
	f.IntVar(&maxRequests, "requests-per-user", acm.DefaultRequestsPerUser, "title requests the demo subscriber may make at once, then one every 500 ms: 2 a second (requests_per_user, request_refill; more get RTSP 503 / HTTP 429); -1: no limit")
	f.IntVar(&maxConns, "max-conns-per-addr", acm.DefaultMaxConnsPerAddr, "open connections per client address at the front door and at each node (max_conns_per_addr; more are answered 503 and closed at accept); -1: no limit")
	return cmd
}

// maxUpNodes bounds --nodes: every node of `up` runs in this process with
// its own listeners and title cache.
const maxUpNodes = 100

// checkUpFlags refuses the values of up's flags that would start a cluster
// that cannot play (no node, a node with no egress, or a disk too small
// for a sample title; a --host of every address, which its nodes would
// announce) or run one without end (a million nodes), or fail
// only once the cluster is up (a negative origin setting, refused by the
// part it configures in its own words; a --policy the scheduler does not
// know; up's RunE refuses negative durations, echoed as typed).
func checkUpFlags(o clusterOptions, play string, transport string, once bool) error {
	switch {
	case o.Nodes < 1 || o.Nodes > maxUpNodes:
		return fmt.Errorf("up: --nodes %d out of 1..%d", o.Nodes, maxUpNodes)
	case net.ParseIP(o.Host) != nil && net.ParseIP(o.Host).IsUnspecified():
		// its nodes would announce it, and the manager refuse them
		return fmt.Errorf("up: --host %s means every address, not one the front door can send viewers to: give one of this machine's (127.0.0.1 by default)", o.Host)
	case o.NodeEgress <= 0:
		return fmt.Errorf("up: --node-egress-bps %d must be > 0", o.NodeEgress)
	case o.NodeDisk <= 0:
		return fmt.Errorf("up: --node-disk-bytes %d must be > 0", o.NodeDisk)
	case o.NodeDisk < largestSample():
		return fmt.Errorf("up: --node-disk-bytes %d: below the largest sample title (%d bytes), which no node could then hold", o.NodeDisk, largestSample())
	case o.OriginRateBps < 0:
		return fmt.Errorf("up: --origin-rate-bps %d is negative (0: unlimited)", o.OriginRateBps)
	case o.OriginMaxTransfers < 0:
		return fmt.Errorf("up: --origin-channels %d is negative (0: unlimited)", o.OriginMaxTransfers)
	case o.MetricsPort < -1:
		return fmt.Errorf("up: --metrics-port %d: a port, 0 for any, or -1 for none", o.MetricsPort)
	case o.Policy != "" && !slices.Contains(lsm.Policies(), o.Policy):
		// It started the origin, then failed in the manager's words
		// ("manager: acm: lsm: unknown policy"), the flag unnamed.
		return fmt.Errorf("up: --policy %q: no such scheduling policy (known: %v)", o.Policy, lsm.Policies())
	case transport != "tcp" && transport != "udp":
		return fmt.Errorf("up: --transport %q: want tcp or udp", transport)
	case once && play == "":
		return fmt.Errorf("up: --once stops the cluster after --play: give --play TITLE")
	case play != "" && !slices.Contains(samples.IDs(), play):
		// It started the whole cluster, then failed with the front
		// door's 404, printed twice.
		return fmt.Errorf("up: --play %q: no such title: up serves the sample titles %s ... %s (vodctl titles lists them once up)",
			play, samples.IDs()[0], samples.IDs()[len(samples.IDs())-1])
	}
	ports := []struct {
		name string
		port int
	}{{"rtsp-port", o.RTSPPort}, {"http-port", o.HTTPPort}, {"grpc-port", o.GRPCPort}, {"metrics-port", o.MetricsPort}}
	for i, p := range ports {
		if p.port > 65535 {
			return fmt.Errorf("up: --%s %d out of 0..65535", p.name, p.port)
		}
		if p.port < 0 && p.name != "metrics-port" {
			return fmt.Errorf("up: --%s %d out of 0..65535", p.name, p.port)
		}
		// Two listeners of the manager on one port: the second failed
		// with "bind: address already in use", as if another process
		// held it. 0 (any free port) and -1 (no metrics) are not ports.
		for _, q := range ports[:i] {
			if p.port > 0 && p.port == q.port {
				return fmt.Errorf("up: --%s and --%s are both %d: give each its own port (0: any free one)", q.name, p.name, p.port)
			}
		}
	}
	return nil
}

// checkUpHost refuses a --host every part of up could not listen on (a
// name that does not resolve, an address not on this machine) before
// anything starts, naming the flag: the origin failed first, in its own
// words, "origin: cdp: listen tcp 192.0.2.1:0: bind: cannot assign
// requested address". It listens on a free TCP port of host and closes it.
func checkUpHost(host string) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return fmt.Errorf("up: --host %s: %w: give an address of this machine (127.0.0.1 by default)", host, err)
	}
	return l.Close()
}

// unbracketHost returns host without the brackets of an IPv6 address
// written as in a URL ("[::1]" is "::1": up tried to listen on
// "[[::1]]:0" and refused the flag, "missing port in address: give an
// address of this machine", for one of this machine's addresses); any
// other host as given.
func unbracketHost(host string) string {
	if in, ok := strings.CutPrefix(host, "["); ok {
		if in, ok = strings.CutSuffix(in, "]"); ok {
			if _, err := netip.ParseAddr(in); err == nil {
				return in
			}
		}
	}
	return host
}

// playFor says how long up's --play of d plays: "for 5s", or "to the end
// of the title" for 0 (it said "for 0s").
func playFor(d time.Duration) string {
	if d == 0 {
		return "to the end of the title"
	}
	return "for " + durflag.Readable(d)
}

// reportPlay writes the result of up's --play of title to out, or its
// failure (err, or no video frame received) when up goes on running;
// with once it returns the failure for up's caller to print, not
// written here as well: it was printed twice. It returns the failure,
// naming the title, or nil. d is --play-duration and setup
// --origin-setup-delay: a play that received nothing says how long it
// played and which flags to change (it said only "no video frame
// received" when the fill's first bytes came after the play ended).
func reportPlay(out io.Writer, title string, res probe.Result, err error, once bool, d, setup time.Duration) error {
	if err == nil && res.VideoFrames == 0 {
		switch {
		case res.Bytes > 0:
			err = fmt.Errorf("no video frame received (%d bytes came)", res.Bytes)
		case d > 0:
			err = fmt.Errorf("no video frame received: nothing came in %s of play (a node filling the title gets the origin's first bytes after --origin-setup-delay %s: give a longer --play-duration)",
				durflag.Readable(d), durflag.Readable(setup))
		default:
			err = fmt.Errorf("no video frame received: nothing came before the play ended")
		}
	}
	if err == nil {
		fmt.Fprintln(out, res)
		return nil
	}
	err = fmt.Errorf("up: --play %s failed: %w", title, err)
	if !once {
		fmt.Fprintln(out, err)
	}
	return err
}

// namingDataDirInUse words the manager's refusal of a store another
// process holds (store.ErrLocked) in up's terms: the flag that gave the
// directory and what holds it, another vodcluster up on the same
// --data-dir or a manager whose data_dir is its manager/ directory. It
// said "manager: acm: store: data directory in use by another process:
// DIR/manager", naming neither. Other errors are returned as they are.
func namingDataDirInUse(err error, dataDir string) error {
	if !errors.Is(err, store.ErrLocked) {
		return err
	}
	return fmt.Errorf("up: --data-dir %s: in use by another vodcluster (an up on the same --data-dir, or a vodcluster manager whose data_dir is %s): stop it, or give another --data-dir",
		dataDir, filepath.Join(dataDir, "manager"))
}

// checkDataDir makes up's --data-dir dir when it is missing and checks
// that a file can be made in it, by making one and removing it: a
// directory this user cannot write (or on a read-only file system, which
// stops root too, whom permission bits do not) failed only once the
// cluster started, with an error naming a file in it and not the flag
// (open DIR/secret: permission denied). The error names the flag, the
// directory and why.
func checkDataDir(dir string) error {
	if info, err := os.Stat(dir); err == nil && !info.IsDir() {
		return fmt.Errorf("up: --data-dir %s: not a directory", dir)
	}
	if target, err := os.Readlink(filepath.Clean(dir)); err == nil {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			// MkdirAll would say "file exists": the link is there, what
			// it names is not (a volume not mounted, a directory moved).
			return fmt.Errorf("up: --data-dir %s: a symbolic link to %s, which does not exist", dir, target)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("up: --data-dir %s: cannot create it: %w", dir, pathReason(err, dir))
	}
	f, err := os.CreateTemp(dir, ".vodcluster-write-check-*")
	if err != nil {
		return fmt.Errorf("up: --data-dir %s: not writable: %w", dir, pathReason(err, dir))
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("up: --data-dir %s: a file made in it cannot be removed: %w", dir, err)
	}
	return nil
}

// pathReason returns the reason of err (a *fs.PathError's own error,
// "permission denied"), with the path it names when that is not dir nor
// a file in it (a parent directory that is a file).
func pathReason(err error, dir string) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	if pe.Path == dir || filepath.Dir(pe.Path) == filepath.Clean(dir) {
		return pe.Err
	}
	return fmt.Errorf("%s: %w", pe.Path, pe.Err)
}

// largestSample returns the size of the largest sample title file, bytes
// (0 when the embedded files cannot be read): a node's disk smaller than
// that cannot hold every sample title.
func largestSample() int64 {
	var most int64
	fs.WalkDir(samples.FS(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(d.Name()) != ".ts" {
			return nil
		}
		if info, err := d.Info(); err == nil {
			most = max(most, info.Size())
		}
		return nil
	})
	return most
}

// printBanner writes what runs where and how to play it. gone: the data
// directory is removed before the banner's reader could use a file in it
// (a temporary one with --once): no command names one.
func printBanner(w io.Writer, c *cluster, dataDir string, gone bool) {
	front := c.manager.RTSPAddr()
	nodes := "nodes"
	if len(c.nodes) == 1 {
		nodes = "node"
	}
	fmt.Fprintf(w, "\nvodcluster is up: origin, manager and %d %s (data in %s)\n\n", len(c.nodes), nodes, dataDir)
	fmt.Fprintf(w, "  front door RTSP  rtsp://%s/vod/<title>\n", front)
	fmt.Fprintf(w, "  front door HTTP  http://%s/vod/<title>.ts  and  /vod/<title>/index.m3u8\n", c.manager.HTTPAddr())
	fmt.Fprintf(w, "  admin gRPC       %s   (vodctl --manager %s nodes|sessions|titles|placement|fills|popularity|policy)\n", c.manager.GRPCAddr(), c.manager.GRPCAddr())
	if a := c.manager.MetricsAddr(); a != "" {
		fmt.Fprintf(w, "  metrics          http://%s/metrics  (origin: http://%s/metrics; nodes below)\n", a, c.origin.MetricsAddr())
	}
	limit := "no limit of sessions"
	if n := c.manager.MaxSessionsPerUser; n > 0 {
		limit = fmt.Sprintf("at most %d sessions at once: --max-sessions-per-user", n)
	}
	fmt.Fprintf(w, "  subscriber       %s / %s (entitled to every title; %s)\n", demoUser, demoPassword, limit)
	if f := c.opts.SessionRecordsFile; f != "" {
		fmt.Fprintf(w, "  session records  %s  (a JSON line per ended session)\n", f)
	}
	fmt.Fprintf(w, "  titles           sample-001 ... sample-020\n\n")
	fmt.Fprintf(w, "  ffmpeg -rtsp_transport tcp -i rtsp://%s:%s@%s/vod/sample-001 -t 4 -f null -\n", demoUser, demoPassword, front)
	fmt.Fprintf(w, "  ffplay -autoexit -rtsp_transport tcp rtsp://%s:%s@%s/vod/sample-002\n", demoUser, demoPassword, front)
	fmt.Fprintf(w, "  gst-launch-1.0 rtspsrc location=rtsp://%s/vod/sample-003 user-id=%s user-pw=%s ! rtpmp2tdepay ! tsdemux ! fakesink\n", front, demoUser, demoPassword)
	fmt.Fprintf(w, "  ffplay -autoexit http://%s:%s@%s/vod/sample-004/index.m3u8   # HLS\n", demoUser, demoPassword, c.manager.HTTPAddr())
	fmt.Fprintf(w, "  cvlc --play-and-exit http://%s:%s@%s/vod/sample-005.ts\n", demoUser, demoPassword, c.manager.HTTPAddr())
	fmt.Fprintf(w, "  bin/vodctl play --transport udp rtsp://%s:%s@%s/vod/sample-006\n", demoUser, demoPassword, front)
	fmt.Fprintf(w, "  curl -u %s:%s -L -o /tmp/sample-008.ts http://%s/vod/sample-008.ts\n", demoUser, demoPassword, c.manager.HTTPAddr())
	if f := c.opts.PortalSecretFile; f != "" {
		// A player given a portal's subscriber token needs no password.
		if tok, err := signSubscriberToken(tokenRequest{User: demoUser, TTL: time.Hour, SecretFile: f}, time.Now()); err == nil && gone {
			fmt.Fprintf(w, "  ffplay -autoexit 'http://%s/vod/sample-007/index.m3u8?token=%s'   # a portal's subscriber token, good 1 h (its secret goes with the temporary data directory)\n",
				c.manager.HTTPAddr(), tok)
		} else if err == nil {
			fmt.Fprintf(w, "  ffplay -autoexit 'http://%s/vod/sample-007/index.m3u8?token=%s'   # a portal's subscriber token, good 1 h (bin/vodcluster subscriber-token --secret-file %s --user %s)\n",
				c.manager.HTTPAddr(), tok, f, demoUser)
		}
	}
	for _, n := range c.nodes {
		if m := n.MetricsAddr(); m != "" {
			fmt.Fprintf(w, "  node %-11s rtsp %s  http %s  metrics http://%s/metrics\n", n.ID, n.RTSPAddr(), n.HTTPAddr(), m)
		} else {
			fmt.Fprintf(w, "  node %-11s rtsp %s  http %s\n", n.ID, n.RTSPAddr(), n.HTTPAddr())
		}
	}
}

// errOutputClosed is the cause up stops with when a write to its output
// fails with EPIPE: the reader of its pipe exited.
var errOutputClosed = errors.New("up: its output was closed (the command reading it exited): the cluster was shut down")

// outputWatch is up's output: a write that fails with EPIPE (SIGPIPE
// asked for, so that it does not kill the process) calls gone with
// errOutputClosed.
type outputWatch struct {
	w    io.Writer
	gone context.CancelCauseFunc
}

// Write writes b to the output; its result is the output's.
func (o outputWatch) Write(b []byte) (int, error) {
	n, err := o.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		o.gone(errOutputClosed)
	}
	return n, err
}

// outputClosed returns err, or errOutputClosed when that is why ctx
// ended and err is nil.
func outputClosed(ctx context.Context, err error) error {
	if err == nil && errors.Is(context.Cause(ctx), errOutputClosed) {
		return errOutputClosed
	}
	return err
}
