package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"vodcluster/proto/token"
	v1 "vodcluster/proto/vodcluster/v1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// evict without a node is refused with a message that says what to give,
// before any call to the manager (none listens on the address).
func TestEvictNeedsNode(t *testing.T) {
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--manager", "127.0.0.1:1", "evict", "sample-013"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "name the NODE") {
		t.Fatalf("evict without NODE: %v", err)
	}
}

// An Admin API that wants a token: without one, and with a wrong one,
// vodctl says which flag gives it; with the right one the call goes
// through (to an Admin server that implements nothing).
func TestAdminTokenHint(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const want = "0123456789abcdef-admin"
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := token.CheckBearer(ctx, want); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}))
	v1.RegisterAdminServer(srv, v1.UnimplementedAdminServer{})
	go srv.Serve(lis)
	defer srv.Stop()
	run := func(args ...string) error {
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--manager", lis.Addr().String(), "--token", ""}, args...))
		return cmd.Execute()
	}
	if err := run("nodes"); err == nil || !strings.HasSuffix(err.Error(), " [UNAUTHENTICATED]") ||
		!strings.Contains(err.Error(), "give it with --token-file, --token, $VODCTL_TOKEN or $VODCTL_TOKEN_FILE") {
		t.Fatalf("no token: %v", err)
	}
	if err := run("--token", want, "pin", "t1", "n1", "--node", "n2"); err == nil || !strings.Contains(err.Error(), "NODE given twice") {
		t.Fatalf("two nodes: %v", err)
	}
	// An empty NODE (a script's unset "$NODE") is not the cluster.
	for _, args := range [][]string{{"pin", "t1", ""}, {"unpin", "t1", "--node", ""}, {"prefetch", "t1", ""}, {"pin", "t1", " "}} {
		if err := run(append([]string{"--token", want}, args...)...); err == nil || !strings.Contains(err.Error(), "NODE is empty (leave it out to ") {
			t.Fatalf("%q: %v, want NODE is empty", args, err)
		}
	}
	if err := run("--token", want, "evict", "t1", "--node", "n1"); status.Code(err) != codes.Unimplemented ||
		!strings.HasSuffix(err.Error(), " [UNIMPLEMENTED]") {
		t.Fatalf("evict --node: %v", err)
	}
	if err := run("--token", "wrong-wrong-wrong", "nodes"); err == nil || !strings.Contains(err.Error(), "not the manager's admin_token_file") {
		t.Fatalf("wrong token: %v", err)
	}
	if err := run("--token", want, "nodes"); status.Code(err) != codes.Unimplemented {
		t.Fatalf("right token: %v", err)
	}
	// A token file, as the manager's admin_token_file: white space around
	// the token is not part of it.
	dir := t.TempDir()
	file, empty := filepath.Join(dir, "admin-token"), filepath.Join(dir, "empty")
	if err := os.WriteFile(file, []byte("  "+want+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runEnv := func(args ...string) error {
		cmd := newRoot()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"--manager", lis.Addr().String()}, args...))
		return cmd.Execute()
	}
	if err := runEnv("--token-file", file, "nodes"); status.Code(err) != codes.Unimplemented {
		t.Fatalf("--token-file: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--token-file", file, "--token", want}, "--token and --token-file: give one"},
		{[]string{"--token-file", filepath.Join(dir, "none")}, "--token-file " + filepath.Join(dir, "none") + ": open: no such file"},
		{[]string{"--token-file", empty}, "--token-file " + empty + ": the file holds no token"},
	} {
		if err := runEnv(append(c.args, "nodes")...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	// A token given as the file's name by mistake is not shown.
	t.Setenv("VODCTL_TOKEN_FILE", "s3cr3t-token-0123456789")
	if err := runEnv("nodes"); err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "$VODCTL_TOKEN_FILE: no such file") {
		t.Fatalf("$VODCTL_TOKEN_FILE naming no file, without '/': %v", err)
	}
	// vodctl play calls no Admin API: a token file it cannot read does
	// not stop it (it fails here for the URL alone).
	t.Setenv("VODCTL_TOKEN_FILE", filepath.Join(dir, "none"))
	if err := runEnv("play", "http://not-rtsp/"); err == nil || strings.Contains(err.Error(), "VODCTL_TOKEN_FILE") {
		t.Fatalf("vodctl play with an unreadable $VODCTL_TOKEN_FILE: %v", err)
	}
	t.Setenv("VODCTL_TOKEN_FILE", file)
	if err := runEnv("nodes"); status.Code(err) != codes.Unimplemented {
		t.Fatalf("token from $VODCTL_TOKEN_FILE: %v", err)
	}
	t.Setenv("VODCTL_TOKEN_FILE", empty)
	if err := runEnv("nodes"); err == nil || !strings.Contains(err.Error(), "$VODCTL_TOKEN_FILE "+empty+": the file holds no token") {
		t.Fatalf("$VODCTL_TOKEN_FILE empty: %v", err)
	}
	t.Setenv("VODCTL_TOKEN", want) // before $VODCTL_TOKEN_FILE
	if err := runEnv("nodes"); status.Code(err) != codes.Unimplemented {
		t.Fatalf("token from $VODCTL_TOKEN: %v", err)
	}
	if err := runEnv("--token-file", file, "nodes"); status.Code(err) != codes.Unimplemented {
		t.Fatalf("--token-file with $VODCTL_TOKEN set: %v", err)
	}
}

// vodctl pointed at a gRPC server that is not a manager (the origin's
// port, a typo) says so: it said only "Unimplemented: unknown service
// vodcluster.v1.Admin".
func TestNotAManagerHint(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	v1.RegisterOriginServer(srv, v1.UnimplementedOriginServer{}) // what the origin serves: no Admin
	go srv.Serve(lis)
	defer srv.Stop()
	cmd := newRoot()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--manager", lis.Addr().String(), "--token", "", "nodes"})
	err = cmd.Execute()
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), lis.Addr().String()+" serves gRPC but is no manager") {
		t.Fatalf("not a manager: %v", err)
	}
}

// titlesDown is an Admin server whose catalog refresh fails as the
// manager's does when its origin is down.
type titlesDown struct{ v1.UnimplementedAdminServer }

func (titlesDown) RefreshCatalog(context.Context, *v1.RefreshCatalogRequest) (*v1.RefreshCatalogResponse, error) {
	return nil, status.Error(codes.Unavailable, `catalog not read from the origin 127.0.0.1:1: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`)
}

// The manager's own Unavailable answer, which quotes its link to the
// origin, is not taken for vodctl failing to reach the manager: it was
// followed by "(is the manager running with its gRPC at ...?)".
func TestManagersAnswerNotTakenForNoManager(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	v1.RegisterAdminServer(srv, titlesDown{})
	go srv.Serve(lis)
	defer srv.Stop()
	cmd := newRoot()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--manager", lis.Addr().String(), "--token", "", "titles", "--refresh"})
	err = cmd.Execute()
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "catalog not read from the origin") ||
		strings.Contains(err.Error(), "is the manager running") {
		t.Fatalf("origin down at the manager: %v", err)
	}
	// Nothing listening: the hint stays.
	lis2, _ := net.Listen("tcp", "127.0.0.1:0")
	gone := lis2.Addr().String()
	lis2.Close()
	cmd = newRoot()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--manager", gone, "--token", "", "nodes"})
	if err := cmd.Execute(); !strings.Contains(fmt.Sprint(err), "is the manager running with its gRPC at "+gone) {
		t.Fatalf("no manager: %v", err)
	}
}

// --help does not show the admin token taken from $VODCTL_TOKEN.
func TestHelpHidesToken(t *testing.T) {
	t.Setenv("VODCTL_TOKEN", "secret-token-0123456789")
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"nodes", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "secret-token") || !strings.Contains(out.String(), "$VODCTL_TOKEN") {
		t.Fatalf("help:\n%s", out.String())
	}
}

// vodctl's list of commands names every STATE `vodctl sessions` can show
// (its summary left out orphaned, which only its long help gave).
func TestSessionsSummaryNamesEveryState(t *testing.T) {
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "sessions" {
			line = l
		}
	}
	for _, state := range []string{"admitted", "playing", "paused", "finished", "orphaned"} {
		if !strings.Contains(line, state) {
			t.Errorf("vodctl --help's sessions line does not name %s: %q", state, line)
		}
	}
}

// Every command states the arguments it takes (cobra's Args validators),
// and wrong arguments or an out-of-range flag are refused before any call
// reaches the manager: `nodes extra` is not `nodes`, and a weight of 2^32
// does not wrap to 0 (drain) on its way into the int32 of the request.
func TestArgsCheckedBeforeCall(t *testing.T) {
	for _, c := range newRoot().Commands() {
		if c.Args == nil && c.Name() != "help" && c.Name() != "completion" {
			t.Errorf("vodctl %s has no Args validator", c.Name())
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		calls.Add(1)
		return h(ctx, req)
	}))
	v1.RegisterAdminServer(srv, v1.UnimplementedAdminServer{})
	go srv.Serve(lis)
	defer srv.Stop()
	run := func(args ...string) error {
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--manager", lis.Addr().String(), "--token", ""}, args...))
		return cmd.Execute()
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		// cobra's own messages: `unknown command "extra" for "vodctl nodes"`
		// (there is no such command to mistype), "accepts 1 arg(s), received 0".
		{[]string{"nodes", "extra"}, `nodes takes no arguments, got "extra" (usage: vodctl nodes [flags])`},
		{[]string{"sessions", "end"}, "name the sessions, or give --user"},
		{[]string{"sessions", "end", "abc", "--user", "alice"}, "name the sessions, or give --user"},
		{[]string{"titles", "x"}, `titles takes no arguments, got "x"`},
		{[]string{"sessions", "x"}, `sessions takes no arguments, got "x" (usage: vodctl sessions [flags]; subcommands: end)`},
		{[]string{"placement", "x"}, `placement takes no arguments, got "x"`},
		{[]string{"fills", "x"}, `fills takes no arguments, got "x"`},
		{[]string{"suspensions", "x", "y"}, `suspensions takes no arguments, got "x" "y"`},
		{[]string{"policy", "lall", "wlc"}, `policy takes at most 1 argument, got 2 ("lall" "wlc") (usage: vodctl policy [NAME] [flags])`},
		{[]string{"node"}, "node takes 1 argument, got none (usage: vodctl node NODE_ID [flags])"},
		{[]string{"node", "n1", "n2", "--drain"}, `node takes 1 argument, got 2 ("n1" "n2")`},
		{[]string{"node", "forget"}, "node forget takes 1 argument, got none (usage: vodctl node forget NODE_ID [flags])"},
		{[]string{"pin"}, "pin takes 1 or 2 arguments, got none (usage: vodctl pin TITLE [NODE] [flags])"},
		{[]string{"pin", "t", "n", "x"}, `pin takes 1 or 2 arguments, got 3 ("t" "n" "x")`},
		{[]string{"evict", "t", "n", "x"}, `evict takes 1 or 2 arguments, got 3`},
		{[]string{"play"}, "play takes 1 argument, got none (usage: vodctl play URL [flags])"},
		// The subscriber's password is not echoed (it was: the refusal is
		// pasted into tickets as the play's report is, which hides it).
		{[]string{"play", "rtsp://demo:s3cret@127.0.0.1:1/vod/sample-001", "5s"},
			`play takes 1 argument, got 2 ("rtsp://demo:xxxxx@127.0.0.1:1/vod/sample-001" "5s")`},
		// Nor the subscriber token (it was).
		{[]string{"play", "rtsp://127.0.0.1:1/vod/sample-001?token=eyJ.a.b", "5s"},
			`play takes 1 argument, got 2 ("rtsp://127.0.0.1:1/vod/sample-001?token=xxxxx" "5s")`},
		{[]string{"node", "n1", "--weight", "4294967296"}, "--weight 4294967296: want 0 (no new sessions) to 65535"},
		{[]string{"node", "n1", "--weight", "-1"}, "--weight -1: want 0"},
		{[]string{"node", "n1", "--weight", "2147483648"}, "--weight 2147483648"},
		// IPVS's weights are 0..65535 (ipvsadm(8)).
		{[]string{"node", "n1", "--weight", "65536"}, "--weight 65536: want 0 (no new sessions) to 65535"},
		{[]string{"node", "n1", "--overload", "1.5"}, "--overload 1.5"},
		{[]string{"node", "n1", "--overload", "-0.1"}, "--overload -0.1"},
		{[]string{"node", "n1", "--overload", "NaN"}, "--overload NaN"},
		// A bare host: gRPC would dial its port 443.
		{[]string{"--manager", "127.0.0.1", "nodes"}, `--manager "127.0.0.1": want HOST:PORT`},
		{[]string{"--manager", "127.0.0.1:", "nodes"}, "want HOST:PORT"},
		// A call with no time at all failed with DEADLINE_EXCEEDED.
		{[]string{"--timeout", "0s", "nodes"}, "--timeout 0s: want a positive duration"},
		{[]string{"--timeout", "-1s", "sessions"}, "--timeout -1s: want a positive duration"},
		// Echoed as typed: they were "-1m0s" and "0s".
		{[]string{"--timeout", "-1m", "sessions"}, "--timeout -1m: want a positive duration"},
		{[]string{"--timeout", "0d", "sessions"}, "--timeout 0d: want a positive duration"},
	} {
		if err := run(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("vodctl %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d calls reached the manager", n)
	}
	// In range, the call is made.
	if err := run("node", "n1", "--weight", "65535"); status.Code(err) != codes.Unimplemented {
		t.Fatalf("weight 65535: %v", err)
	}
	if err := run("nodes"); status.Code(err) != codes.Unimplemented {
		t.Fatalf("nodes: %v", err)
	}
	// node --weight: ListNodes (what held before: a repeat says nothing
	// was to be done), then SetNode.
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d calls reached the manager, want 3", n)
	}
}

// forgetAdmin answers ForgetNode as a manager does: alive for "live",
// unknown for anything but "gone", which it forgets.
type forgetAdmin struct {
	v1.UnimplementedAdminServer
	mu    sync.Mutex
	asked []string
}

func (a *forgetAdmin) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

func (a *forgetAdmin) ForgetNode(_ context.Context, req *v1.ForgetNodeRequest) (*v1.ForgetNodeResponse, error) {
	a.mu.Lock()
	a.asked = append(a.asked, req.GetNodeId())
	a.mu.Unlock()
	switch req.GetNodeId() {
	case "live":
		return nil, status.Error(codes.FailedPrecondition, "node live is alive (last heartbeat 1s ago): drain it")
	case "gone":
		return &v1.ForgetNodeResponse{NodeId: "gone", Registered: true, SessionsEnded: 2, UnpinnedTitles: []string{"t1"},
			Message: "forgotten; 2 sessions left on it ended; unpinned t1 (pin them elsewhere: vodctl pin TITLE NODE)"}, nil
	}
	return nil, status.Errorf(codes.NotFound, "node %q is not registered and has no stored state", req.GetNodeId())
}

// vodctl node forget ID calls ForgetNode (not SetNode on a node called
// "forget"), prints the manager's summary, or the whole answer with
// --json, and passes the manager's refusals on with their code; a
// missing or extra ID is refused before any call.
func TestNodeForget(t *testing.T) {
	fa := &forgetAdmin{}
	run := vodctlAgainst(t, fa)
	for _, args := range [][]string{{"node", "forget"}, {"node", "forget", "a", "b"}} {
		if _, err := run(args...); err == nil || !strings.Contains(err.Error(), "node forget takes 1 argument, got ") {
			t.Errorf("vodctl %s: %v", strings.Join(args, " "), err)
		}
	}
	if c := fa.calls(); len(c) != 0 {
		t.Fatalf("calls made for wrong arguments: %v", c)
	}
	out, err := run("node", "forget", "gone")
	if err != nil || !strings.Contains(out, "node gone:") || !strings.Contains(out, "2 sessions left on it ended") ||
		!strings.Contains(out, "unpinned t1") {
		t.Fatalf("forget gone: %v\n%s", err, out)
	}
	out, err = run("--json", "node", "forget", "gone")
	var got struct {
		NodeID         string   `json:"nodeId"`
		SessionsEnded  int      `json:"sessionsEnded"`
		UnpinnedTitles []string `json:"unpinnedTitles"`
		HoldsRemoved   int      `json:"holdsRemoved"`
	}
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.NodeID != "gone" || got.SessionsEnded != 2 ||
		len(got.UnpinnedTitles) != 1 || !strings.Contains(out, `"holdsRemoved": 0`) {
		t.Fatalf("forget --json: %v %+v\n%s", err, got, out)
	}
	if _, err := run("node", "forget", "live"); status.Code(err) != codes.FailedPrecondition ||
		!strings.HasPrefix(err.Error(), "node live is alive") || !strings.HasSuffix(err.Error(), " [FAILED_PRECONDITION]") {
		t.Fatalf("forget a live node: %v", err)
	}
	if _, err := run("node", "forget", "nope"); status.Code(err) != codes.NotFound {
		t.Fatalf("forget an unknown node: %v", err)
	}
	if want := []string{"gone", "gone", "live", "nope"}; !slices.Equal(fa.calls(), want) {
		t.Fatalf("ForgetNode calls %v, want %v", fa.calls(), want)
	}
}

// vodctlAgainst serves adm as the Admin API on loopback (stopped when the
// test ends) and returns a runner of vodctl commands against it: their
// output (stdout and stderr) and error.
func vodctlAgainst(t *testing.T, adm v1.AdminServer) func(args ...string) (string, error) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	v1.RegisterAdminServer(srv, adm)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return func(args ...string) (string, error) {
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--manager", lis.Addr().String(), "--token", ""}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
}
