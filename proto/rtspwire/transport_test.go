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

// TestServable: over RTSPS and on a node with UDP off only interleaved
// entries are served, for elementary streams only RTP ones, in the
// client's order; the error says which rule left none. NeedsUDP is true
// for a list whose only servable entries are UDP ones.
func TestServable(t *testing.T) {
	const list = "MP2T/UDP;unicast;client_port=6000, RTP/AVP;unicast;client_port=8000-8001, RTP/AVP/TCP;unicast"
	const udp = "MP2T/UDP;unicast;client_port=6000, RTP/AVP;unicast;client_port=8000-8001"
	for _, c := range []struct {
		list     string
		lim      Limits
		want     []string
		err      error
		needsUDP bool
	}{
		{list, Limits{}, []string{"MP2T/UDP", "RTP/AVP", "RTP/AVP/TCP"}, nil, false},
		{list, Limits{ES: true}, []string{"RTP/AVP", "RTP/AVP/TCP"}, nil, false},
		{list, Limits{TLS: true}, []string{"RTP/AVP/TCP"}, nil, false},
		{list, Limits{TLS: true, ES: true}, []string{"RTP/AVP/TCP"}, nil, false},
		{list, Limits{NoUDP: true}, []string{"RTP/AVP/TCP"}, nil, false},
		{list, Limits{NoUDP: true, ES: true}, []string{"RTP/AVP/TCP"}, nil, false},
		{"MP2T/UDP;unicast;client_port=6000", Limits{ES: true}, nil, ErrESNeedsRTP, false},
		{"RTP/AVP;unicast;client_port=8000-8001", Limits{TLS: true}, nil, ErrRTSPSNeedsTCP, false},
		{"MP2T/UDP;unicast;client_port=6000", Limits{TLS: true, ES: true}, nil, ErrRTSPSNeedsTCP, false},
		{udp, Limits{NoUDP: true}, nil, ErrNoUDP, true},
		{udp, Limits{NoUDP: true, TLS: true}, nil, ErrRTSPSNeedsTCP, false},
		{udp, Limits{NoUDP: true, ES: true}, nil, ErrNoUDP, true},
		{"MP2T/UDP;unicast;client_port=6000", Limits{NoUDP: true, ES: true}, nil, ErrNoUDP, false},
		{udp, Limits{}, []string{"MP2T/UDP", "RTP/AVP"}, nil, true},
		{"RTP/AVP/TCP;unicast, RTP/AVP;unicast;client_port=8000-8001", Limits{}, []string{"RTP/AVP/TCP", "RTP/AVP"}, nil, false},
	} {
		ts, err := ParseTransports(c.list)
		if err != nil {
			t.Fatal(err)
		}
		if got := NeedsUDP(ts, c.lim); got != c.needsUDP {
			t.Errorf("%q %+v: NeedsUDP %v, want %v", c.list, c.lim, got, c.needsUDP)
		}
		got, err := Servable(ts, c.lim)
		if !errors.Is(err, c.err) {
			t.Errorf("%q %+v: error %v, want %v", c.list, c.lim, err, c.err)
			continue
		}
		var names []string
		for _, s := range got {
			names = append(names, s.Profile)
		}
		if strings.Join(names, ",") != strings.Join(c.want, ",") {
			t.Errorf("%q %+v: %v, want %v", c.list, c.lim, names, c.want)
		}
	}
}
