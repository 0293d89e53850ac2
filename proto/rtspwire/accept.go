package rtspwire

import (
	"mime"
	"strconv"
	"strings"
)

// AcceptsSDP reports whether a DESCRIBE's Accept header values (RFC 2326
// §12.1, RFC 7826 §18.1: media ranges, comma-separated, each with an
// optional q between 0 and 1) admit application/sdp, the only description
// the cluster answers with: the q of the most specific range that matches
// it (application/sdp, then application/*, then */*, as RFC 9110 §12.5.1
// ranks them; the highest q among equals) is above 0. No Accept header
// admits it (RFC 7826 §13.2: the server then answers with what it has). A
// header that does not parse as media ranges is ignored, so that a
// set-top box's odd Accept is never a refusal; a header that parses and
// gives application/sdp no q above 0 is what 406 Not Acceptable answers.
func AcceptsSDP(values []string) bool {
	listed := false
	best, bestQ := 0, 0.0 // specificity of the best match (0: none), its q
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
				if q, err = strconv.ParseFloat(s, 64); err != nil || !(q >= 0 && q <= 1) {
					return true
				}
			}
			listed = true
			spec := 0
			switch {
			case mt == "application/sdp":
				spec = 3
			case typ == "application" && sub == "*":
				spec = 2
			case mt == "*/*":
				spec = 1
			}
			if spec > best || (spec == best && spec > 0 && q > bestQ) {
				best, bestQ = spec, q
			}
		}
	}
	return !listed || bestQ > 0
}
