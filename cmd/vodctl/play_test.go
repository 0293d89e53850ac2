package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"vodcluster/cmd/internal/probe"
	v1 "vodcluster/proto/vodcluster/v1"
)

// `vodctl play --json` names its keys in lowerCamelCase as every admin
// command's --json does (protojson: a title's duration_s is durationS);
// they were snake_case (video_frames, media_s).
func TestPlayJSONKeysCamelCase(t *testing.T) {
	var out bytes.Buffer
	printPlay(&out, probe.Result{URL: "rtsp://demo:xxxxx@127.0.0.1:8554/vod/sample-001", Server: "127.0.0.1:8555",
		VideoFrames: 100, AudioFrames: 150, MediaSeconds: 4, WallSeconds: 4.01, Bytes: 1_000_000, Packets: 800, SetupSeconds: 0.02}, true)
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("play --json printed no JSON object: %v\n%s", err, out.String())
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"audioFrames", "bytes", "mediaS", "packets", "server", "setupS", "url", "videoFrames", "wallS"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("play --json keys %v, want %v", keys, want)
	}
	if got["videoFrames"] != float64(100) || got["mediaS"] != float64(4) {
		t.Fatalf("play --json values: %v", got)
	}
	// The admin commands' style, for a key ending in a unit as mediaS does.
	b, err := protojson.Marshal(&v1.Title{Id: "t", DurationS: 20})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"durationS"`) {
		t.Fatalf("protojson no longer names duration_s durationS: %s", b)
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	for _, k := range keys {
		if !camel.MatchString(k) {
			t.Errorf("key %q is not lowerCamelCase", k)
		}
	}

	out.Reset()
	printPlay(&out, probe.Result{URL: "u", Server: "s", VideoFrames: 3}, false)
	if !strings.HasPrefix(out.String(), "played u from s: 3 video frames") {
		t.Fatalf("play without --json: %q", out.String())
	}
}

// vodctl play refuses a URL without a host, as it refuses one that is
// not a URL (exit status 1): rtsp:///vod/sample-001 dialed port 554 of
// the local host ("dial tcp :554: connection refused"), rtsps:/// 322,
// and rtsp://:8554/... the front door's port there. HTTP URLs it
// refuses whatever their host: it plays RTSP.
func TestPlayRefusesURLWithoutHost(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"rtsp:///vod/sample-001", `"rtsp:///vod/sample-001" has no host: want rtsp://[USER:PASSWORD@]HOST:PORT/vod/TITLE`},
		{"rtsps:///vod/sample-001", `"rtsps:///vod/sample-001" has no host`},
		{"RTSP:///vod/sample-001", `"rtsp:///vod/sample-001" has no host`},
		{"rtsp://demo:demo@/vod/sample-001", `"rtsp://demo:xxxxx@/vod/sample-001" has no host`},
		{"rtsp://:8554/vod/sample-001", `"rtsp://:8554/vod/sample-001" has no host`},
		{"rtsp://demo@:8554/vod/sample-001", `"rtsp://demo@:8554/vod/sample-001" has no host`},
		{"http:///vod/sample-001.ts", "this client plays RTSP (rtsp:// or rtsps://), not http://"},
	} {
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := run([]string{"play", "--duration", "1s", c.url}, &stdout, &stderr)
		if code != 1 || !strings.HasPrefix(stderr.String(), "vodctl: ") || strings.Contains(stderr.String(), "probe:") || !strings.Contains(stderr.String(), c.want) ||
			strings.Contains(stderr.String(), "dial") || stdout.Len() > 0 || time.Since(start) > 2*time.Second {
			t.Errorf("play %s: exit status %d after %v\n%s%s\nwant 1 and %s", c.url, code, time.Since(start), stdout.String(), stderr.String(), c.want)
		}
	}
}

// A URL whose password does not parse shows no part of the password in
// vodctl's error, play's and --manager's alike (play quoted
// `invalid port ":qj" after host` and the URL whole; --manager the value
// as given), and says to percent-encode it.
func TestBadURLPasswordHidden(t *testing.T) {
	for _, args := range [][]string{
		{"play", "rtsp://demo:qj/kw@127.0.0.1:1/vod/sample-001"},
		{"play", "--json", "rtsp://demo:qj%zkw@127.0.0.1:1/vod/sample-001"},
		{"--manager", "http://admin:qj/kw@127.0.0.1:1", "nodes"},
		{"--manager", "admin:qj/kw@127.0.0.1:1", "nodes"},
	} {
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		if err == nil {
			t.Fatalf("%v: no error", args)
		}
		all := err.Error() + out.String()
		if strings.Contains(all, "qj") || strings.Contains(all, "kw") {
			t.Errorf("%v: the password shows: %v\n%s", args, err, out.String())
		}
		if args[0] == "play" && !strings.Contains(err.Error(), "percent-encode") {
			t.Errorf("%v: %v, want it to say percent-encode", args, err)
		}
		if args[0] == "--manager" && !strings.Contains(err.Error(), "xxxxx@127.0.0.1:1") {
			t.Errorf("%v: %v, want the value without its password", args, err)
		}
	}
}

// A negative --duration is refused echoing it as typed (the probe's
// refusal was "duration -1m30s is negative" for -90s).
func TestPlayDurationEchoedAsTyped(t *testing.T) {
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"play", "--duration", "-90s", "rtsp://demo:demo@127.0.0.1:1/vod/sample-001"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--duration -90s is negative (0 plays to the end)") {
		t.Fatalf("play --duration -90s: %v", err)
	}
}

// An '@' in a URL's query after a port is the query's own: vodctl play
// refused "rtsp://HOST:PORT/vod/TITLE?from=a@b" as a password to
// percent-encode; it plays (here: dials, and nothing listens).
func TestPlayAtInQuery(t *testing.T) {
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"play", "rtsp://127.0.0.1:1/vod/sample-001?from=a@b"})
	err := cmd.Execute()
	if err == nil || strings.Contains(err.Error(), "percent-encode") || !strings.Contains(err.Error()+out.String(), "127.0.0.1:1") {
		t.Fatalf("%v\n%s: want a dial error", err, out.String())
	}
}

// vodctl play of a URL with a password, a path that is not a title's and
// an '@' in its query (rtsp://demo:PW@HOST/live/x?from=a@b) took the '@'
// for the query's own and dialled HOST, also when the '@' ends a
// password with '/' and '?' in it before a host written as a word alone
// (rtsp://u:p@h:8554/x?a=wd@vodfront: host vodfront, the password
// "p@h:8554/x?a=wd" sent to h and shown in its errors). It is refused
// before any dial, shown up to the last '@' hidden, saying to
// percent-encode the password, or the '@' if it is the query's.
func TestPlayAtInQueryAfterOtherPath(t *testing.T) {
	for _, path := range []string{"/live/x?from=a@b", "/x?a=b@c", "/x?a=wd@vodfront"} {
		raw := "rtsp://demo:s3cr3t@127.0.0.1:1" + path
		var stdout, stderr bytes.Buffer
		code := run([]string{"play", "--duration", "1s", raw}, &stdout, &stderr)
		all := stdout.String() + stderr.String()
		if code != 1 || !strings.Contains(all, "percent-encode") || !strings.Contains(all, "write it as %40") || strings.Contains(all, "dial") {
			t.Errorf("play %s: exit status %d\n%s\nwant 1, refused before any dial", path, code, all)
		}
		if strings.Contains(all, "s3cr3t") || strings.Contains(all, "3cr") || strings.Contains(all, "127.0.0.1:1") {
			t.Errorf("play %s: a part of what may be the password shows:\n%s", path, all)
		}
	}
}
