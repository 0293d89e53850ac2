package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"vodcluster/cmd/internal/probe"
)

// vodctl play's client (probe) with a portal's subscriber token, through
// the front door: the report names the URL without the token (it printed
// it whole, a bearer credential good until it expires, in the text and
// in --json's url), and a refused request says what was refused and why:
// a token refused, with the front door's reason (bound to another client
// address, expired), a password refused, or no credentials given; each
// was only "401 (Unauthorized)".
func TestProbeSubscriberTokenHiddenAndRefusalsExplained(t *testing.T) {
	secret := t.TempDir() + "/portal-secret"
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.PortalSecretFile = secret })
	sign := func(ip string, issued time.Time) string {
		tok, err := signSubscriberToken(tokenRequest{User: "demo", IP: ip, TTL: time.Minute, SecretFile: secret}, issued)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	front := c.manager.RTSPAddr()
	tok := sign("", time.Now())
	res, err := probe.PlayContext(fmt.Sprintf("rtsp://%s/vod/sample-001?token=%s", front, tok), probe.Options{Duration: time.Second})
	if err != nil || res.VideoFrames == 0 {
		t.Fatalf("play with a token: %v, %+v", err, res)
	}
	js, _ := json.Marshal(res)
	if want := fmt.Sprintf("rtsp://%s/vod/sample-001?token=xxxxx", front); res.URL != want ||
		strings.Contains(res.String(), tok) || strings.Contains(string(js), tok) {
		t.Errorf("the report names the token: %s\n%s", res, js)
	}

	for _, r := range []struct{ url, want string }{
		{fmt.Sprintf("rtsp://%s/vod/sample-001?token=%s", front, sign("192.0.2.77", time.Now())),
			"401 (Unauthorized): the subscriber token in the URL was refused: bound to another client address"},
		{fmt.Sprintf("rtsp://%s/vod/sample-001?token=%s", front, sign("", time.Now().Add(-time.Hour))),
			"401 (Unauthorized): the subscriber token in the URL was refused: token has invalid claims: token is expired"},
		{fmt.Sprintf("rtsp://demo:wrong@%s/vod/sample-001", front),
			"401 (Unauthorized (credentials refused)): the user name and password in the URL were refused"},
		{fmt.Sprintf("rtsp://%s/vod/sample-001", front),
			"401 (Unauthorized): no credentials: give the subscriber's user name and password in the URL, rtsp://USER:PASSWORD@HOST:PORT/vod/TITLE, or a subscriber token, ?token=JWT"},
		// An empty token is a token refused (it was "no credentials").
		{fmt.Sprintf("rtsp://%s/vod/sample-001?token=", front),
			"401 (Unauthorized): the subscriber token in the URL was refused: token is malformed"},
		// A node's URL (the front door's redirect) with a stale admission
		// token: the node's refusal (it was "no credentials", with the
		// front door's URL forms).
		{fmt.Sprintf("rtsp://%s/s/eyJ.stale.token/vod/sample-001", c.nodes[0].RTSPAddr()),
			"401 (Unauthorized): the node refused the admission token of the URL (/s/TOKEN/): invalid admission token; a node's URL is the front door's redirect"},
	} {
		res, err := probe.PlayContext(r.url, probe.Options{Duration: time.Second})
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: %v\nwant %q", res.URL, err, r.want)
		}
		if strings.Contains(res.URL, "eyJ") || (err != nil && strings.Contains(err.Error(), "eyJ")) {
			t.Errorf("a refusal names the token: %s: %v", res.URL, err)
		}
	}

	// A front door that takes no subscriber tokens (no subscriber_tokens)
	// asks for a password: the token was not refused, it was not looked
	// at (it was "refused: the front door gave no reason").
	plain := startTestCluster(t, 1, 100_000_000, nil)
	_, err = probe.PlayContext(fmt.Sprintf("rtsp://%s/vod/sample-001?token=%s", plain.manager.RTSPAddr(), tok), probe.Options{Duration: time.Second})
	if want := "401 (Unauthorized): the front door takes no subscriber tokens (its manager has no subscriber_tokens)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a token at a front door that takes none: %v\nwant %q", err, want)
	}
}
