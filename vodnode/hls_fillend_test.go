package vodnode

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// An HLS playlist asked for while the fill's last bytes are written and
// the title not yet complete (synced, checked, renamed) waits for it and
// lists every segment: closed with EXT-X-ENDLIST without the last one, a
// player never reloads it and never plays the title's end (a read at the
// end of a complete copy was taken for one past it).
func TestHLSPlaylistAcrossTheFillsEnd(t *testing.T) {
	o := newFakeOrigin(t)
	o.rate = int64(len(o.titles["short-001"])) // a fill of about 1 s
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "hls-end", "short-001", "node-1", "", time.Minute), "short-001/index.m3u8")
	res, first := get(t, url)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("playlist: %d %s", res.StatusCode, first)
	}
	var whole []byte
	waitFor(t, 10*time.Second, "the fill to complete", func() bool {
		res, b := get(t, url)
		whole = b
		return res.StatusCode == http.StatusOK && strings.Contains(string(b), "#EXT-X-ENDLIST")
	})
	if got, want := strings.Count(string(first), "#EXTINF"), strings.Count(string(whole), "#EXTINF"); strings.Contains(string(first), "#EXT-X-ENDLIST") && got < want {
		t.Fatalf("the first playlist ended (EXT-X-ENDLIST) with %d segments; the title has %d:\n%s", got, want, first)
	}
}
