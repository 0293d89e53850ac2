package rtspwire

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseTransports(t *testing.T) {
	specs, err := ParseTransports(`X-UNKNOWN/FOO;unicast, RTP/AVP;multicast;port=5000-5001, MP2T/UDP;unicast;destination=10.0.0.5;client_port=6000, ` +
		`RAW/RAW/UDP;unicast;client_port=7000, mp2t/rtp/udp;unicast;client_port=8000-8001, MP2T/RTP/TCP;unicast;interleaved=2-3, ` +
		`RTP/AVP/TCP;unicast, RTP/AVP;unicast;client_port=9000-9001;mode="PLAY", RTP/AVP;unicast;client_port=1-2;mode=record, RTP/AVP;unicast`)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		profile string
		mode    Delivery
		ports   [2]int
		il      [2]int
	}{
		{"MP2T/UDP", RawUDP, [2]int{6000, 6001}, [2]int{-1, -1}},
		{"RAW/RAW/UDP", RawUDP, [2]int{7000, 7001}, [2]int{-1, -1}},
		{"MP2T/RTP/UDP", RTPUDP, [2]int{8000, 8001}, [2]int{-1, -1}},
		{"MP2T/RTP/TCP", RTPTCP, [2]int{}, [2]int{2, 3}},
		{"RTP/AVP/TCP", RTPTCP, [2]int{}, [2]int{-1, -1}},
		{"RTP/AVP", RTPUDP, [2]int{9000, 9001}, [2]int{-1, -1}},
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
		if _, err := ParseTransports(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
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
		specs, err := ParseTransports(v)
		if err != nil {
			return
		}
		for _, s := range specs {
			if _, ok := profiles[s.Profile]; !ok {
				t.Fatalf("unknown profile accepted: %q", s.Profile)
			}
			if s.Mode != RTPTCP && (s.ClientPorts[0] < 1 || s.ClientPorts[0] > 65535) {
				t.Fatalf("bad client port %v from %q", s.ClientPorts, v)
			}
			if s.Interleaved[0] > 255 || s.Interleaved[1] > 255 {
				t.Fatalf("bad channels %v", s.Interleaved)
			}
		}
	})
}

// TestServable: over RTSPS only interleaved entries are served, for
// elementary streams only RTP ones, in the client's order; the error says
// which rule left none.
func TestServable(t *testing.T) {
	const list = "MP2T/UDP;unicast;client_port=6000, RTP/AVP;unicast;client_port=8000-8001, RTP/AVP/TCP;unicast"
	for _, c := range []struct {
		list    string
		tls, es bool
		want    []string
		err     error
	}{
		{list, false, false, []string{"MP2T/UDP", "RTP/AVP", "RTP/AVP/TCP"}, nil},
		{list, false, true, []string{"RTP/AVP", "RTP/AVP/TCP"}, nil},
		{list, true, false, []string{"RTP/AVP/TCP"}, nil},
		{list, true, true, []string{"RTP/AVP/TCP"}, nil},
		{"MP2T/UDP;unicast;client_port=6000", false, true, nil, ErrESNeedsRTP},
		{"RTP/AVP;unicast;client_port=8000-8001", true, false, nil, ErrRTSPSNeedsTCP},
		{"MP2T/UDP;unicast;client_port=6000", true, true, nil, ErrRTSPSNeedsTCP},
	} {
		ts, err := ParseTransports(c.list)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Servable(ts, c.tls, c.es)
		if !errors.Is(err, c.err) {
			t.Errorf("%q tls=%v es=%v: error %v, want %v", c.list, c.tls, c.es, err, c.err)
			continue
		}
		var names []string
		for _, s := range got {
			names = append(names, s.Profile)
		}
		if strings.Join(names, ",") != strings.Join(c.want, ",") {
			t.Errorf("%q tls=%v es=%v: %v, want %v", c.list, c.tls, c.es, names, c.want)
		}
	}
}
