package main

import (
	"bytes"
	"strings"
	"testing"
)

// A flag value of the wrong kind is one line naming the flag, the value
// and what it takes, before any call to the manager: --weight abc printed
// pflag's and strconv's words ("invalid argument \"abc\" for \"--weight\"
// flag: strconv.ParseInt: parsing \"abc\": invalid syntax").
func TestFlagValueErrorNamesFlagAndWhatItTakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "node-1", "--weight", "abc"}, `vodctl: --weight "abc": want a whole number: scheduling weight, 0..65535 as in IPVS`},
		{[]string{"node", "node-1", "--overload", "high"}, `vodctl: --overload "high": want a number: utilization above which`},
		{[]string{"node", "node-1", "--drain=maybe"}, `vodctl: --drain "maybe": want true or false: stop giving the node new sessions`},
		{[]string{"popularity", "--limit", "99999999999"}, `vodctl: --limit "99999999999": want a whole number from -2147483648 to 2147483647: at most this many titles`},
		{[]string{"node", "node-1", "--weight", "-99999999999999999999"}, `vodctl: --weight "-99999999999999999999": want a whole number from -9223372036854775808 to 9223372036854775807: scheduling weight`},
		{[]string{"node", "node-1", "--overload", "1e999"}, `vodctl: --overload "1e999": want a number of magnitude at most 1.7976931348623157e+308: utilization above which`},
		{[]string{"play", "--duration", "abc", "rtsp://127.0.0.1:1/vod/x"}, `vodctl: --duration "abc": want a duration such as 90s`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"--manager", "127.0.0.1:1"}, c.args...), &stdout, &stderr)
		if code != 1 || !strings.HasPrefix(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 1 and one line beginning %q", c.args, code, stderr.String(), c.want)
		}
		for _, lib := range []string{"strconv", "invalid argument", "invalid syntax"} {
			if strings.Contains(stderr.String(), lib) {
				t.Errorf("%v: %q in %q", c.args, lib, stderr.String())
			}
		}
	}
}
