package vodnode

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// A Range in a format the node does not play from (clock=, or any other
// than npt= and smpte=) is 501, as RFC 2326 §12.29 says ("a time format
// that is not understood"), and docs/delivery.md's status table says so;
// 457 is an empty or malformed npt/smpte range or one out of bounds. The
// table said 457 for an "unreadable Range", which read as clock= too.
func TestRangeFormatStatusDocumented(t *testing.T) {
	for _, v := range []string{"clock=20261130T150000Z-", "frames=10-", "CLOCK=19961108T143720.25Z-"} {
		if _, _, err := parseRange(base.HeaderValue{v}, false); !errors.Is(err, errRangeFormat) {
			t.Errorf("%s: %v, want errRangeFormat (501)", v, err)
		}
	}
	for _, v := range []string{"npt=abc-", "smpte=00:00:01:99-", "npt=inf-"} {
		if _, _, err := parseRange(base.HeaderValue{v}, false); err == nil || errors.Is(err, errRangeFormat) {
			t.Errorf("%s: %v, want a malformed range (457)", v, err)
		}
	}
	b, err := os.ReadFile("../docs/delivery.md")
	if err != nil {
		t.Fatal(err)
	}
	row := func(prefix string) string {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("docs/delivery.md has no row %q", prefix)
		return ""
	}
	if r := row("| 501 Not Implemented |"); !strings.Contains(r, "`clock=`") || !strings.Contains(r, "§12.29") {
		t.Errorf("the 501 row does not name clock= (RFC 2326 §12.29): %s", r)
	}
	// The SMPTE types of RFC 2326 §3.5 the node plays from are named
	// where the formats are: the 501 row read "any other than npt= and
	// smpte=", as if smpte-25= and smpte-30-drop= were refused.
	for _, v := range []string{"smpte-25=0:00:10:05-", "smpte-30-drop=0:00:10-0:00:20", "SMPTE-25=0:00:01-"} {
		if _, _, err := parseRange(base.HeaderValue{v}, false); err != nil {
			t.Errorf("%s: %v, want it played", v, err)
		}
	}
	for _, prefix := range []string{"| 501 Not Implemented |", "| 457 Invalid Range |"} {
		if r := row(prefix); !strings.Contains(r, "`smpte-25=`") || !strings.Contains(r, "`smpte-30-drop=`") {
			t.Errorf("the row %q does not name smpte-25= and smpte-30-drop=, formats the node plays from: %s", prefix, r)
		}
	}
	if r := row("| 457 Invalid Range |"); strings.Contains(r, "clock") || strings.Contains(r, "unreadable") {
		t.Errorf("the 457 row claims the range formats the node answers 501: %s", r)
	}
}
