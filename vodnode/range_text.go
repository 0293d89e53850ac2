package vodnode

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// nptNoDash is an npt Range of a single time without the dash the
// grammar requires after a start (RFC 2326 §3.6: npt-range = npt-time
// "-" [npt-time]): "npt=5", which some clients send for "from 5 s".
var nptNoDash = regexp.MustCompile(`^npt\s*=\s*(\d{1,9}(\.\d*)?|\d{1,6}:\d{1,2}:\d{1,2}(\.\d*)?)\s*$`)

// invalidRangeText is the body of PLAY's 457 for a Range header v that
// parseRange refused with err (nil: a value it read as infinite or not a
// number): the value, why, and the forms the node plays, so that an
// operator reading a box's log sees what to change. A value of one time
// without its dash names the form meant ("npt=5-").
func invalidRangeText(v base.HeaderValue, err error) string {
	raw := ""
	if len(v) > 0 {
		raw = strings.TrimSpace(v[0])
	}
	const forms = "the node plays npt=START-, npt=START-END, npt=-END and npt=now- (seconds, or h:mm:ss), smpte=, smpte-25= and smpte-30-drop= (RFC 2326 §3.5, §3.6)"
	if nptNoDash.MatchString(strings.ToLower(raw)) {
		return fmt.Sprintf("invalid Range %q: a start needs its dash (%s-); %s", raw, raw, forms)
	}
	why := "not a time"
	if err != nil {
		why = err.Error()
	}
	return fmt.Sprintf("invalid Range %q: %s; %s", truncateForText(raw, 80), why, forms)
}

// truncateForText returns s cut to at most n bytes with "…" after a cut,
// so that an answer does not echo a huge header back.
func truncateForText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
