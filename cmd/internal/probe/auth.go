package probe

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// bearerDescription is the error_description of a Bearer challenge (RFC
// 6750 §3), the front door's reason for refusing a subscriber token.
var bearerDescription = regexp.MustCompile(`error_description="((?:[^"\\]|\\.)*)"`)

// unauthorizedHint says, for a DESCRIBE answered 401, what was refused:
// the subscriber token of u (with the front door's reason, as its Bearer
// challenge gives it: expired, bound to another client address, ...),
// the user name and password of u, or nothing, u carrying neither. It
// is "" for any other answer (nil too). The status line alone ("401
// (Unauthorized)") did not tell a token refused from a password
// refused or credentials missing.
func unauthorizedHint(u *base.URL, answer *base.Response) string {
	if answer == nil || answer.StatusCode != base.StatusUnauthorized {
		return ""
	}
	uu := (*url.URL)(u)
	if uu.Query().Get("token") != "" {
		why := "the front door gave no reason"
		for _, h := range answer.Header["WWW-Authenticate"] {
			if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(h)), "bearer") {
				continue
			}
			if m := bearerDescription.FindStringSubmatch(h); m != nil {
				why = strings.ReplaceAll(m[1], `\"`, `"`)
				break
			}
		}
		return ": the subscriber token in the URL was refused: " + why
	}
	if uu.User != nil {
		return ": the user name and password in the URL were refused (a subscriber the users file does not know, or a wrong password)"
	}
	return ": no credentials: give the subscriber's in the URL, rtsp://USER:PASSWORD@HOST:PORT/vod/TITLE, or a subscriber token, ?token=JWT"
}
