package acm

import "testing"

func TestVODPaths(t *testing.T) {
	for _, tc := range []struct {
		p, title, rest string
		ok             bool
	}{
		{"/vod/sample-001", "sample-001", "", true},
		{"/vod/a.b_c/trackID=1", "a.b_c", "/trackID=1", true},
		{"/vod/t/", "t", "", true},
		{"/vod/", "", "", false},
		{"/vod/x y", "", "", false},
		{"/live/x", "", "", false},
		{"/vod/t/es", "t", "/es", true},
		{"/vod/t/es/trackID=1", "t", "/es/trackID=1", true},
		{"/vod/t/trackID=0/", "t", "/trackID=0/", true},
		{"/vod/sample-001/../sample-002", "", "", false},
		{"/vod/sample-001/es/x", "", "", false},
		{"/vod/t/trackID=x", "", "", false},
		{"/vod/t/index.m3u8", "", "", false},
	} {
		title, rest, ok := vodPath(tc.p)
		if ok != tc.ok || (ok && (title != tc.title || rest != tc.rest)) {
			t.Errorf("rtsp %q: %q %q %v", tc.p, title, rest, ok)
		}
	}
	for _, tc := range []struct {
		p, title, rest string
		ok             bool
	}{
		{"/vod/sample-001.ts", "sample-001", ".ts", true},
		{"/vod/movie.v2.ts", "movie.v2", ".ts", true},
		{"/vod/sample-001/index.m3u8", "sample-001", "/index.m3u8", true},
		{"/vod/a/b/index.m3u8", "", "", false},
		{"/vod/a/seg.ts", "", "", false},
		{"/vod/.ts", "", "", false},
		{"/vod/a.mp4", "", "", false},
	} {
		title, rest, ok := httpVODPath(tc.p)
		if ok != tc.ok || (ok && (title != tc.title || rest != tc.rest)) {
			t.Errorf("http %q: %q %q %v", tc.p, title, rest, ok)
		}
	}
}

func FuzzVODPath(f *testing.F) {
	for _, s := range []string{"/vod/t1", "/vod/t1/trackID=0", "/vod/t1.ts", "/vod/t1/index.m3u8", "/vod//", "/vod/\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		// A trailing slash after the title is dropped ("/vod/t/" is "/vod/t").
		if title, rest, ok := vodPath(p); ok && (!idPattern.MatchString(title) || ("/vod/"+title+rest != p && "/vod/"+title+"/" != p)) {
			t.Fatalf("rtsp %q -> %q %q", p, title, rest)
		}
		if title, rest, ok := httpVODPath(p); ok && (!idPattern.MatchString(title) || "/vod/"+title+rest != p) {
			t.Fatalf("http %q -> %q %q", p, title, rest)
		}
	})
}
