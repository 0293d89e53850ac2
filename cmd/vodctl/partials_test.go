package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"

	v1 "vodcluster/proto/vodcluster/v1"
)

// partialsAdmin answers ListPlacement with one copy and two partial
// fills (one stale), or, with none, the copy alone; and ListNodes with a
// node keeping two partials.
type partialsAdmin struct {
	v1.UnimplementedAdminServer
	none bool
}

func (a partialsAdmin) ListPlacement(context.Context, *v1.ListPlacementRequest) (*v1.ListPlacementResponse, error) {
	r := &v1.ListPlacementResponse{Replicas: []*v1.Replica{{NodeId: "n1", TitleId: "a", StoredBytes: 1000, SizeBytes: 1000}}}
	if !a.none {
		r.Partials = []*v1.NodePartial{
			{NodeId: "n1", TitleId: "b", StoredBytes: 370, SizeBytes: 1000, SinceUnixMs: 1_700_000_000_000},
			{NodeId: "n2", TitleId: "c", StoredBytes: 900, SizeBytes: 999, Pinned: true, Stale: true},
		}
	}
	return r, nil
}

func (partialsAdmin) ListNodes(context.Context, *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	return &v1.ListNodesResponse{Nodes: []*v1.NodeInfo{{NodeId: "n1", RtspAddr: "127.0.0.1:1", Alive: true, Titles: 1,
		DiskFreeBytes: 2_000_000_000, Capacity: &v1.NodeCapacity{DiskBytes: 4_000_000_000}, Partials: 2, PartialBytes: 1_270_000_000}}}, nil
}

// runVodctl runs vodctl with args against an Admin server serving a and
// returns its output.
func runVodctl(t *testing.T, a v1.AdminServer, args ...string) string {
	t.Helper()
	out, err := runVodctlResult(t, a, args...)
	if err != nil {
		t.Fatalf("vodctl %v: %v\n%s", args, err, out)
	}
	return out
}

// runVodctlFails runs vodctl as runVodctl does, and returns its error and
// output; it fails the test if vodctl succeeds.
func runVodctlFails(t *testing.T, a v1.AdminServer, args ...string) string {
	t.Helper()
	out, err := runVodctlResult(t, a, args...)
	if err == nil {
		t.Fatalf("vodctl %v succeeded:\n%s", args, out)
	}
	return err.Error() + "\n" + out
}

// runVodctlResult runs vodctl with args against an Admin server serving
// a and returns its output and error.
func runVodctlResult(t *testing.T, a v1.AdminServer, args ...string) (string, error) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	v1.RegisterAdminServer(srv, a)
	go srv.Serve(lis)
	defer srv.Stop()
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"--manager", lis.Addr().String(), "--token", ""}, args...))
	err = cmd.Execute()
	return out.String(), err
}

// vodctl placement lists the partial fills after the copies, in a table of
// their own ("partial NN%", "stale NN%"); without partials its output is
// the copies' table alone, as before.
func TestPlacementListsPartials(t *testing.T) {
	plain := runVodctl(t, partialsAdmin{none: true}, "placement")
	lines := strings.Split(strings.TrimSpace(plain), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "TITLE NODE STORED SIZE STATE PINNED STALE" ||
		strings.Join(strings.Fields(lines[1]), " ") != "a n1 1.00 kB 1.00 kB stored false false" {
		t.Fatalf("placement without partials:\n%s", plain)
	}

	out := runVodctl(t, partialsAdmin{}, "placement")
	if !strings.HasPrefix(out, plain) {
		t.Errorf("the copies' table changed with partials beside it:\n%s\nwant it to begin with:\n%s", out, plain)
	}
	rows := map[string][]string{}
	head := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "TITLE" && strings.Contains(l, "KEPT"):
			head = true
		case head && len(f) > 0:
			rows[f[0]] = f
		}
	}
	if r := rows["b"]; len(r) < 9 || r[1] != "n1" || r[2]+" "+r[3] != "370 B" || r[4]+" "+r[5] != "1.00 kB" || r[6] != "partial" || r[7] != "37%" || r[8] != "false" {
		t.Errorf("partial b: %v", r)
	}
	if r := rows["c"]; len(r) != 10 || r[1] != "n2" || r[6] != "stale" || r[7] != "90%" || r[8] != "true" || r[9] != "-" {
		t.Errorf("stale partial c: %v", r)
	}
	if t.Failed() {
		t.Log("\n" + out)
	}
}

// vodctl nodes gives each node's partial fills and their bytes in two
// columns after the others.
func TestNodesListPartials(t *testing.T) {
	out := runVodctl(t, partialsAdmin{}, "nodes")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("nodes:\n%s", out)
	}
	if h := lines[0]; !strings.HasSuffix(h, "DISK FREE  DISK     PARTIALS  PARTIAL") {
		t.Errorf("nodes:\n%s", out)
	}
	if r := lines[1]; !strings.HasSuffix(r, "2.00 GB    4.00 GB  2         1.27 GB") {
		t.Errorf("DISK FREE, DISK, PARTIALS and PARTIAL:\n%s", out)
	}
}
