package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "vodcluster/proto/vodcluster/v1"
)

// An operator publishes a title to a running cluster (its file copied to
// the origin's directory, its entry added to catalog.yaml) and withdraws
// another: without a restart the new title plays through the front door,
// filled from the origin, and the withdrawn one is refused (404).
func TestPublishAndWithdrawWithoutRestart(t *testing.T) {
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.CatalogRefresh = 200 * time.Millisecond })
	dir := c.origin.Dir
	url := c.frontURL("demo", "demo", "premiere")
	if out, _ := rtspStatus(t, url); !strings.Contains(out, "404") {
		t.Fatalf("an unpublished title: want 404:\n%s", out)
	}

	clip, err := os.ReadFile(filepath.Join(dir, "clip-b.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "premiere.ts"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	docPath := filepath.Join(dir, "catalog.yaml")
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(doc, []byte("  - id: sample-005\n"))
	j := bytes.Index(doc, []byte("  - id: sample-006\n"))
	if i < 0 || j < i {
		t.Fatal("sample-005 not in the sample catalog")
	}
	doc = append(append(doc[:i:i], doc[j:]...), "  - id: premiere\n    name: Premiere\n    file: premiere.ts\n    package: basic\n"...)
	if err := os.WriteFile(docPath, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.origin.Reload(); err != nil { // what SIGHUP does; the watch is tested in cdp
		t.Fatal(err)
	}

	adm := c.admin(t)
	eventually(t, 15*time.Second, "the manager lists the new title and not the withdrawn one", func() bool {
		resp, err := adm.ListTitles(context.Background(), &v1.ListTitlesRequest{})
		if err != nil {
			return false
		}
		var premiere, withdrawn bool
		for _, ti := range resp.GetTitles() {
			premiere = premiere || ti.GetId() == "premiere"
			withdrawn = withdrawn || ti.GetId() == "sample-005"
		}
		return premiere && !withdrawn
	})
	p := runFFmpeg(t, url, "tcp", 3)
	if p.Err != nil || p.Frames < 70 {
		t.Fatalf("playing the new title: %v, %d frames of 3 s\n%s", p.Err, p.Frames, p.Out)
	}
	if n := c.nodeFills("premiere"); n != 1 {
		t.Errorf("the new title was filled %d times, want 1", n)
	}
	if n := c.origin.Stats().TitleTransfers["premiere"]; n < 1 {
		t.Errorf("no origin transfer of the new title")
	}
	if out, _ := rtspStatus(t, c.frontURL("demo", "demo", "sample-005")); !strings.Contains(out, "404") {
		t.Errorf("a withdrawn title: want 404:\n%s", out)
	}
}

// A title's file replaced at the origin under the same id, with bytes of
// the same size (a fixed encode): the node's copy of the old version is
// stale, evicted as no one plays it, and the next viewer's fill brings the
// new version from the origin.
func TestReplacedTitleIsFilledAgain(t *testing.T) {
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.CatalogRefresh = 200 * time.Millisecond })
	dir := c.origin.Dir
	clip, err := os.ReadFile(filepath.Join(dir, "clip-b.ts"))
	if err != nil {
		t.Fatal(err)
	}
	publish(t, c, "film", clip)
	url := c.frontURL("demo", "demo", "film")
	if p := runFFmpeg(t, url, "tcp", 1); p.Err != nil || p.Frames < 20 {
		t.Fatalf("first play: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	eventually(t, 15*time.Second, "film's fill complete", func() bool { return len(c.holders("film")) == 1 })
	v1, _ := c.origin.Catalog().Title("film")

	fixed := append([]byte(nil), clip...)
	fixed[188*1000+100] ^= 0xff // a payload byte: same size, another version
	path := filepath.Join(dir, "film.ts")
	if err := os.WriteFile(path+".new", fixed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if err := c.origin.Reload(); err != nil {
		t.Fatal(err)
	}
	v2, _ := c.origin.Catalog().Title("film")
	if v2.Version == v1.Version {
		t.Fatal("the replaced file kept its version")
	}
	eventually(t, 15*time.Second, "the stale copy evicted", func() bool { return len(c.holders("film")) == 0 })

	if p := runFFmpeg(t, url, "tcp", 1); p.Err != nil || p.Frames < 20 {
		t.Fatalf("play after the replacement: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	eventually(t, 15*time.Second, "film filled again", func() bool { return len(c.holders("film")) == 1 })
	for _, st := range c.nodes[0].Titles() {
		if st.ID == "film" && st.Version != v2.Version {
			t.Errorf("the node's copy is version %s, want the new %s", st.Version, v2.Version)
		}
	}
	if n := c.nodeFills("film"); n != 2 {
		t.Errorf("film filled %d times, want 2", n)
	}
}

// publish adds title id with the bytes data to the running cluster's
// origin (its file and its catalog entry, package basic), has the origin
// read its directory, and waits for the manager to list it.
func publish(t *testing.T, c *cluster, id string, data []byte) {
	t.Helper()
	dir := c.origin.Dir
	if err := os.WriteFile(filepath.Join(dir, id+".ts"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	docPath := filepath.Join(dir, "catalog.yaml")
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc = append(doc, "  - id: "+id+"\n    file: "+id+".ts\n    package: basic\n"...)
	if err := os.WriteFile(docPath, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.origin.Reload(); err != nil {
		t.Fatal(err)
	}
	adm := c.admin(t)
	eventually(t, 15*time.Second, "the manager lists "+id, func() bool {
		resp, err := adm.ListTitles(context.Background(), &v1.ListTitlesRequest{})
		if err != nil {
			return false
		}
		for _, ti := range resp.GetTitles() {
			if ti.GetId() == id {
				return true
			}
		}
		return false
	})
}
