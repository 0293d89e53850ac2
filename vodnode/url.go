package vodnode

import (
	"errors"
	"net/url"
	"strconv"
	"strings"

	"vodcluster/vodnode/store"
)

// target is what a request URL names: a title, the admission token that
// came with it, and the media track when the URL is a track's control URL.
type target struct {
	Token string
	Title string
	Track int  // -1 when the URL names the whole title
	ES    bool // /es/<title>: elementary streams (H.264 and AAC tracks) instead of MP2T
}

// Errors of parseTarget.
var (
	errNoPath  = errors.New("no such resource: want /s/<token>/vod/<title>, /s/<token>/es/<title> or /vod/<title>?token=<token>")
	errNoToken = errors.New("missing admission token")
	errTrack   = errors.New("invalid track")
)

// parseTarget parses the path and raw query of a request URL. Accepted
// forms (a trailing "/", "/trackID=N" or "/" + the same after the query, as
// clients append them when resolving control URLs, are accepted):
//
//	/s/<token>/vod/<title>[/trackID=N]
//	/vod/<title>[/trackID=N]?token=<token>[/trackID=N]
//
// and, for elementary-stream mode, the same with /es/ in place of /vod/
// or with /es after the title (/vod/<title>/es, which the front door's
// redirect carries over from rtsp://front/vod/<title>/es).
// A title must be a valid store id. A URL without a token gives the title
// and errNoToken; an unrecognised path errNoPath.
func parseTarget(path, rawQuery string) (target, error) {
	tg := target{Track: -1}
	tok := ""
	rest, hasTok := strings.CutPrefix(path, "/s/")
	if hasTok {
		var ok bool
		tok, rest, ok = strings.Cut(rest, "/")
		if !ok || tok == "" {
			return tg, errNoPath
		}
		rest = "/" + rest
	}
	rest, ok := strings.CutPrefix(rest, "/vod/")
	if !ok {
		if rest, ok = strings.CutPrefix(rest, "/es/"); !ok {
			return tg, errNoPath
		}
		tg.ES = true
	}
	title, track, err := cutTrack(rest)
	if err != nil {
		return tg, err
	}
	if t, ok := strings.CutSuffix(title, "/es"); ok && !tg.ES {
		title, tg.ES = t, true // /vod/<title>/es: the form the front door passes on
	}
	if !store.ValidID(title) {
		return tg, errNoPath
	}
	tg.Title, tg.Track = title, track
	if !hasTok && rawQuery != "" {
		q, qtrack, err := cutTrack(rawQuery)
		if err != nil {
			return tg, err
		}
		if qtrack >= 0 {
			tg.Track = qtrack
		}
		vals, err := url.ParseQuery(q)
		if err == nil {
			tok = vals.Get("token")
		}
	}
	if tok == "" {
		return tg, errNoToken
	}
	tg.Token = tok
	return tg, nil
}

// cutTrack removes a trailing "/" or "/trackID=N" (N a small integer) from s.
func cutTrack(s string) (string, int, error) {
	s = strings.TrimSuffix(s, "/")
	i := strings.LastIndex(s, "/")
	if i < 0 {
		return s, -1, nil
	}
	last := s[i+1:]
	n, ok := strings.CutPrefix(last, "trackID=")
	if !ok {
		return s, -1, nil
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 0 || v > 255 {
		return s, -1, errTrack
	}
	return s[:i], v, nil
}
