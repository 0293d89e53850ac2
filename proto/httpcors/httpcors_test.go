package httpcors

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPreflightAndHeaders: a preflight is answered 204 with the methods
// and the request headers a player sends (Authorization, Range, If-Range),
// and every answer exposes the headers a player's script reads (byte
// ranges, ETag).
func TestPreflightAndHeaders(t *testing.T) {
	r := httptest.NewRequest(http.MethodOptions, "/vod/t.ts", nil)
	r.Header.Set("Origin", "https://portal.example.net")
	r.Header.Set("Access-Control-Request-Method", "GET")
	r.Header.Set("Access-Control-Request-Headers", "authorization,range")
	w := httptest.NewRecorder()
	if !Options(w, r) {
		t.Fatal("a preflight not answered")
	}
	h := w.Result().Header
	if w.Code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "GET") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Range") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "If-Range") || h.Get("Allow") == "" {
		t.Fatalf("preflight: %d %v", w.Code, h)
	}
	if Options(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil)) {
		t.Fatal("a GET taken for OPTIONS")
	}
	hh := http.Header{}
	Header(hh)
	if hh.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(hh.Get("Access-Control-Expose-Headers"), "Content-Range") ||
		!strings.Contains(hh.Get("Access-Control-Expose-Headers"), "ETag") {
		t.Fatalf("headers %v", hh)
	}
}
