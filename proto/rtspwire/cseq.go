package rtspwire

import "strings"

// ValidCSeq reports whether v is a CSeq value of RFC 2326 §12.17: one or
// more decimal digits, with white space around (which a response's echo
// trims). Its length is not limited: the value is echoed, never parsed as
// a number.
func ValidCSeq(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
