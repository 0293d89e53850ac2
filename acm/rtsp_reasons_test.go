package acm

import (
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// The RTSP front door's 404 and 403 say why in their reason phrase, as
// its other refusals and the HTTP front door's answers do: a title the
// catalog lacks, a URL that names no title, a title outside the
// subscriber's packages (they were "Not Found" and "Forbidden" alone,
// which players print as all they know).
func TestRTSPRefusalsSayWhy(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	c := e.dialRTSP()
	for _, tc := range []struct {
		name, path, user, pw string
		code                 base.StatusCode
		msg                  string
	}{
		{"unknown title", "/vod/nope", "demo", "demo", base.StatusNotFound, "Not Found (no such title)"},
		{"not under /vod", "/live/t1", "demo", "demo", base.StatusNotFound, notTitleURL},
		{"an HLS path", "/vod/t1/index.m3u8", "demo", "demo", base.StatusNotFound, notTitleURL},
		{"outside packages", "/vod/adult-1", "kid", "kid", base.StatusForbidden, "Forbidden (title not in your packages)"},
	} {
		res := c.mustDo(base.Describe, tc.path, basicHeader(tc.user, tc.pw))
		if res.StatusCode != tc.code || res.StatusMessage != tc.msg {
			t.Errorf("%s: %d %q, want %d %q", tc.name, res.StatusCode, res.StatusMessage, tc.code, tc.msg)
		}
	}
}
