package acm

import "strings"

// nodeIDLess orders node ids as an operator reads them: runs of digits by
// their number, so node-2 comes before node-10 (as text, node-10, node-11
// … came between node-1 and node-2, hard to read at 40 nodes). Ties in
// number (node-02, node-2) and everything else compare as text.
func nodeIDLess(a, b string) bool {
	if c := naturalCompare(a, b); c != 0 {
		return c < 0
	}
	return a < b
}

// compareNodeIDs orders node ids as nodeIDLess does, for slices.SortFunc.
func compareNodeIDs(a, b string) int {
	switch {
	case nodeIDLess(a, b):
		return -1
	case nodeIDLess(b, a):
		return 1
	}
	return 0
}

// naturalCompare compares a and b run by run: digit runs by value (their
// leading zeros ignored, any length), other runs as text. It returns -1,
// 0 or +1.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da != db {
			return strings.Compare(a[:1], b[:1])
		}
		ra, rb := run(a, da), run(b, db)
		a, b = a[len(ra):], b[len(rb):]
		if da {
			ra, rb = strings.TrimLeft(ra, "0"), strings.TrimLeft(rb, "0")
			if len(ra) != len(rb) {
				if len(ra) < len(rb) {
					return -1
				}
				return 1
			}
		}
		if c := strings.Compare(ra, rb); c != 0 {
			return c
		}
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// run returns the leading run of s of digits (digits set) or non-digits.
func run(s string, digits bool) string {
	i := 0
	for i < len(s) && isDigit(s[i]) == digits {
		i++
	}
	return s[:i]
}
