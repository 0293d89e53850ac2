package vodnode

import (
	"net/netip"
	"strings"
	"testing"

	"vodcluster/vodnode/deliver"
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

func TestParseTransports(t *testing.T) {
	specs, err := parseTransports(`X-UNKNOWN/FOO;unicast, RTP/AVP;multicast;port=5000-5001, MP2T/UDP;unicast;destination=10.0.0.5;client_port=6000, ` +
		`RAW/RAW/UDP;unicast;client_port=7000, mp2t/rtp/udp;unicast;client_port=8000-8001, MP2T/RTP/TCP;unicast;interleaved=2-3, ` +
		`RTP/AVP/TCP;unicast, RTP/AVP;unicast;client_port=9000-9001;mode="PLAY", RTP/AVP;unicast;client_port=1-2;mode=record, RTP/AVP;unicast`)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		profile string
		mode    deliver.Mode
		ports   [2]int
		il      [2]int
	}{
		{"MP2T/UDP", deliver.RawUDP, [2]int{6000, 6001}, [2]int{-1, -1}},
		{"RAW/RAW/UDP", deliver.RawUDP, [2]int{7000, 7001}, [2]int{-1, -1}},
		{"MP2T/RTP/UDP", deliver.RTPUDP, [2]int{8000, 8001}, [2]int{-1, -1}},
		{"MP2T/RTP/TCP", deliver.RTPTCP, [2]int{}, [2]int{2, 3}},
		{"RTP/AVP/TCP", deliver.RTPTCP, [2]int{}, [2]int{-1, -1}},
		{"RTP/AVP", deliver.RTPUDP, [2]int{9000, 9001}, [2]int{-1, -1}},
	}
	if len(specs) != len(want) {
		t.Fatalf("%d specs: %+v", len(specs), specs)
	}
	for i, w := range want {
		s := specs[i]
		if s.Profile != w.profile || s.Mode != w.mode || s.ClientPorts != w.ports || s.Interleaved != w.il {
			t.Errorf("spec %d: %+v, want %+v", i, s, w)
		}
	}
	if specs[0].Destination != netip.MustParseAddr("10.0.0.5") {
		t.Errorf("destination %v", specs[0].Destination)
	}
	for _, bad := range []string{"", "RTP/AVP;unicast", "RTP/SAVP;unicast;client_port=1-2", "RTP/AVP;unicast;client_port=0-1",
		"RTP/AVP;unicast;client_port=70000", "RTP/AVP/TCP;interleaved=300-301", "RTP/AVP/TCP;interleaved=255", strings.Repeat("RTP/AVP,", 1000)} {
		if _, err := parseTransports(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	got := responseTransport(specs[2], netip.MustParseAddr("127.0.0.1"), 6970, 6971, 0xABCD)
	if got != "MP2T/RTP/UDP;unicast;destination=127.0.0.1;client_port=8000-8001;server_port=6970-6971;ssrc=0000ABCD;mode=play" {
		t.Errorf("response transport %q", got)
	}
	// A single client port with none above it for RTCP is echoed alone
	// (it was "client_port=65535-0").
	last, err := parseTransports("RTP/AVP;unicast;client_port=65535")
	if err != nil {
		t.Fatal(err)
	}
	if got := responseTransport(last[0], netip.MustParseAddr("127.0.0.1"), 6970, 6971, 0xABCD); got != "RTP/AVP;unicast;destination=127.0.0.1;client_port=65535;server_port=6970-6971;ssrc=0000ABCD;mode=play" {
		t.Errorf("response transport %q", got)
	}
}

func FuzzParseTransports(f *testing.F) {
	for _, s := range []string{
		"RTP/AVP;unicast;client_port=5000-5001",
		"RTP/AVP/TCP;unicast;interleaved=0-1",
		"MP2T/RTP/UDP;unicast;destination=1.2.3.4;client_port=5000-5001,RAW/RAW/UDP;unicast;client_port=5000",
		"MP2T/UDP;unicast;client_port=65535;mode=PLAY",
		"x;;;=,,;client_port=-",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		specs, err := parseTransports(v)
		if err != nil {
			return
		}
		for _, s := range specs {
			if _, ok := profiles[s.Profile]; !ok {
				t.Fatalf("unknown profile accepted: %q", s.Profile)
			}
			if s.Mode != deliver.RTPTCP && (s.ClientPorts[0] < 1 || s.ClientPorts[0] > 65535) {
				t.Fatalf("bad client port %v from %q", s.ClientPorts, v)
			}
			if s.Interleaved[0] > 255 || s.Interleaved[1] > 255 {
				t.Fatalf("bad channels %v", s.Interleaved)
			}
			responseTransport(s, netip.MustParseAddr("127.0.0.1"), 1, 2, 3)
		}
	})
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
		{"/s/TOK/vod/sample-001/seg-x.ts", "", 0, "", 0, errNoPath},
		{"/s/TOK/vod/sample-001/seg--1.ts", "", 0, "", 0, errNoPath},
		{"/s/TOK/vod/../x.ts", "", 0, "", 0, errNoPath},
		{"/s/TOK/vod/sample-001", "", 0, "", 0, errNoPath},
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
		if tg.Token == "" || !store.ValidID(tg.Title) || tg.Kind < httpTS || tg.Kind > httpSegment || tg.Seg < 0 {
			t.Fatalf("%q %q gave %+v", path, query, tg)
		}
	})
}
