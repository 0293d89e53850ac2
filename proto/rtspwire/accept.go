package rtspwire

import (
	"mime"
	"strconv"
	"strings"
)

// AcceptsSDP reports whether a DESCRIBE's Accept header values (RFC 2326
// §12.1, RFC 7826 §18.1: media ranges, comma-separated, each with an
// optional q between 0 and 1) admit application/sdp, the only description
// the cluster answers with. No Accept header admits it (RFC 7826 §13.2:
// the server then answers with what it has). A header that does not parse
// as media ranges is ignored, so that a set-top box's odd Accept is never
// a refusal; a header that parses and lists no range matching
// application/sdp with a q above 0 is what 406 Not Acceptable answers.
func AcceptsSDP(values []string) bool {
	listed := false
	for _, v := range values {
		for _, r := range strings.Split(v, ",") {
			if strings.TrimSpace(r) == "" {
				continue
			}
			mt, params, err := mime.ParseMediaType(r)
			if err != nil {
				return true
			}
			typ, sub, ok := strings.Cut(mt, "/")
			if !ok {
				return true
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil || q < 0 || q > 1 {
					return true
				}
			}
			listed = true
			if q > 0 && (mt == "*/*" || (typ == "application" && (sub == "*" || sub == "sdp"))) {
				return true
			}
		}
	}
	return !listed
}
