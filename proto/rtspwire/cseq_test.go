package rtspwire

import "testing"

func TestValidCSeq(t *testing.T) {
	for v, want := range map[string]bool{
		"1": true, "007": true, " 2\t": true, "123456789012345678901234567890": true,
		"": false, " ": false, "+1": false, "-1": false, "0x10": false, "1 2": false, "abc": false, "１": false,
	} {
		if got := ValidCSeq(v); got != want {
			t.Errorf("ValidCSeq(%q) = %v, want %v", v, got, want)
		}
	}
}
