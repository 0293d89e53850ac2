package vodnode

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"vodcluster/proto/rtspwire"
	"vodcluster/vodnode/store"
)

func TestParseTarget(t *testing.T) {
	cases := []struct {
		path, query string
		tok, title  string
		track       int
		err         error
	}{
		{"/s/T.o-k_1/vod/sample-001", "", "T.o-k_1", "sample-001", -1, nil},
		{"/s/TOK/vod/sample-001/", "", "TOK", "sample-001", -1, nil},
		{"/s/TOK/vod/sample-001/trackID=0", "", "TOK", "sample-001", 0, nil},
		{"/vod/sample-001", "token=TOK", "TOK", "sample-001", -1, nil},
		{"/vod/sample-001", "token=TOK/trackID=0", "TOK", "sample-001", 0, nil},
		{"/vod/sample-001", "token=TOK/", "TOK", "sample-001", -1, nil},
		{"/vod/sample-001/trackID=0", "token=TOK", "TOK", "sample-001", 0, nil},
		{"/vod/sample-001", "x=1&token=TOK", "TOK", "sample-001", -1, nil},
		{"/vod/sample-001", "", "", "sample-001", -1, errNoToken},
		{"/vod/sample-001", "token=", "", "sample-001", -1, errNoToken},
		{"/s//vod/sample-001", "", "", "", -1, errNoPath},
		{"/s/TOK/other/sample-001", "", "", "", -1, errNoPath},
		{"/vod/../etc/passwd", "token=TOK", "", "", -1, errNoPath},
		{"/vod/.hidden", "token=TOK", "", "", -1, errNoPath},
		{"/vod/a/b", "token=TOK", "", "", -1, errNoPath},
		{"/vod/sample-001/trackID=x", "token=TOK", "", "", -1, errTrack},
		{"/s/TOK/vod/sample-001/es", "", "TOK", "sample-001", -1, nil},
		{"/s/TOK/vod/sample-001/es/trackID=2", "", "TOK", "sample-001", 2, nil},
		{"/vod/sample-001/es/", "token=TOK", "TOK", "sample-001", -1, nil},
		{"/s/TOK/es/sample-001/es", "", "", "", -1, errNoPath},
		{"/", "", "", "", -1, errNoPath},
	}
	for _, c := range cases {
		tg, err := parseTarget(c.path, c.query)
		if err != c.err {
			t.Errorf("%s?%s: err %v, want %v", c.path, c.query, err, c.err)
			continue
		}
		if err == nil && (tg.Token != c.tok || tg.Title != c.title || tg.Track != c.track) {
			t.Errorf("%s?%s: %+v", c.path, c.query, tg)
		}
	}
	for _, p := range []string{"/s/TOK/es/sample-001", "/s/TOK/vod/sample-001/es", "/s/TOK/vod/sample-001/es/trackID=1"} {
		if tg, err := parseTarget(p, ""); err != nil || !tg.ES {
			t.Errorf("%s: %+v %v, want elementary-stream mode", p, tg, err)
		}
	}
	if tg, _ := parseTarget("/s/TOK/vod/sample-001", ""); tg.ES {
		t.Error("/vod/<title> in elementary-stream mode")
	}
}

// TestResponseTransport: the 200 of a SETUP echoes the entry served, with
// the server's ports and SSRC.
func TestResponseTransport(t *testing.T) {
	specs, err := rtspwire.ParseTransports("MP2T/RTP/UDP;unicast;client_port=8000-8001")
	if err != nil {
		t.Fatal(err)
	}
	got := responseTransport(specs[0], netip.MustParseAddr("127.0.0.1"), 6970, 6971, 0xABCD)
	if got != "MP2T/RTP/UDP;unicast;destination=127.0.0.1;client_port=8000-8001;server_port=6970-6971;ssrc=0000ABCD;mode=play" {
		t.Errorf("response transport %q", got)
	}
	// A single client port with none above it for RTCP is echoed alone
	// (it was "client_port=65535-0").
	last, err := rtspwire.ParseTransports("RTP/AVP;unicast;client_port=65535")
	if err != nil {
		t.Fatal(err)
	}
	if got := responseTransport(last[0], netip.MustParseAddr("127.0.0.1"), 6970, 6971, 0xABCD); got != "RTP/AVP;unicast;destination=127.0.0.1;client_port=65535;server_port=6970-6971;ssrc=0000ABCD;mode=play" {
		t.Errorf("response transport %q", got)
	}
}

func FuzzParseTarget(f *testing.F) {
	f.Add("/s/abc.def.ghi/vod/sample-001/trackID=0", "")
	f.Add("/vod/sample-001", "token=abc/trackID=0")
	f.Add("/vod/sample-001/", "token=%zz&x")
	f.Fuzz(func(t *testing.T, path, query string) {
		tg, err := parseTarget(path, query)
		if err != nil {
			return
		}
		if tg.Token == "" || tg.Title == "" || strings.ContainsAny(tg.Title, "/\x00") || strings.HasPrefix(tg.Title, ".") {
			t.Fatalf("%q %q gave %+v", path, query, tg)
		}
		if tg.Track < -1 || tg.Track > 255 {
			t.Fatalf("track %d", tg.Track)
		}
	})
}

func TestParseHTTPTarget(t *testing.T) {
	for _, c := range []struct {
		path, query string
		kind        httpKind
		title       string
		seg         int
		err         error
	}{
		{"/s/TOK/vod/sample-001.ts", "", httpTS, "sample-001", 0, nil},
		{"/vod/sample-001.ts", "token=TOK", httpTS, "sample-001", 0, nil},
		{"/s/TOK/vod/sample-001/index.m3u8", "", httpPlaylist, "sample-001", 0, nil},
		{"/s/TOK/vod/sample-001/seg-12.ts", "", httpSegment, "sample-001", 12, nil},
		{"/vod/sample-001.ts", "", 0, "", 0, errNoToken},
		// a segment's name that is not seg-<n>.ts says so, as a
		// segment past the end does ("no such segment"); the other
		// paths give the HTTP forms (they gave the RTSP ones)
		{"/s/TOK/vod/sample-001/seg-x.ts", "", 0, "", 0, errSegName},
		{"/s/TOK/vod/sample-001/seg--1.ts", "", 0, "", 0, errSegName},
		// one name per segment: the playlist's
		{"/s/TOK/vod/sample-001/seg-01.ts", "", 0, "", 0, errSegName},
		{"/s/TOK/vod/sample-001/seg-+1.ts", "", 0, "", 0, errSegName},
		{"/s/TOK/vod/sample-001/seg-0.ts", "", httpSegment, "sample-001", 0, nil},
		{"/s/TOK/vod/../x.ts", "", 0, "", 0, errNoHTTPPath},
		{"/s/TOK/vod/sample-001", "", 0, "", 0, errNoHTTPPath},
	} {
		tg, err := parseHTTPTarget(c.path, c.query)
		if err != c.err || (err == nil && (tg.Kind != c.kind || tg.Title != c.title || tg.Seg != c.seg || tg.Token != "TOK")) {
			t.Errorf("%s?%s: %+v %v", c.path, c.query, tg, err)
		}
	}
	if tg, err := parseTarget("/s/TOK/es/sample-001/trackID=2", ""); err != nil || !tg.ES || tg.Track != 2 {
		t.Errorf("es target %+v %v", tg, err)
	}
}

func FuzzParseHTTPTarget(f *testing.F) {
	f.Add("/s/abc/vod/sample-001/seg-3.ts", "")
	f.Add("/vod/sample-001.ts", "token=abc&x=1")
	f.Fuzz(func(t *testing.T, path, query string) {
		tg, err := parseHTTPTarget(path, query)
		if err != nil {
			return
		}
		if tg.Token == "" || !store.ValidID(tg.Title) || tg.Kind < httpTS || tg.Kind > httpSegment || tg.Seg < 0 ||
			(tg.Kind == httpSegment && !strings.HasSuffix(path, fmt.Sprintf("/seg-%d.ts", tg.Seg))) {
			t.Fatalf("%q %q gave %+v", path, query, tg)
		}
	})
}
