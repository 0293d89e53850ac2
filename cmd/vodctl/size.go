package main

import (
	"fmt"
	"math"
	"strconv"
)

// sizeUnits are the decimal units of sizeText, each 1000 times the one
// before (disk_bytes and the catalog count in decimal bytes: 100 GB is
// 100000000000).
var sizeUnits = []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}

// sizeText is a size in bytes as the tables of vodctl show it (nodes,
// placement, fills, titles): in the largest decimal unit that leaves at
// least one integer digit, to three significant digits ("512 B",
// "16.0 MB", "1.82 TB"); bytes are whole ("0 B"). A negative b, which
// no listing means as a size, is shown as "-" (vodctl nodes shows a
// free disk it could not measure as "unknown" before calling it).
// --json keeps the exact bytes.
func sizeText(b int64) string {
	if b < 0 {
		return "-"
	}
	if b < 1000 {
		return strconv.FormatInt(b, 10) + " B"
	}
	v, u := float64(b), 0
	for v >= 1000 && u < len(sizeUnits)-1 {
		v /= 1000
		u++
	}
	var s string
	switch { // as rounded: 9.996 is "10.0", not "10.00"
	case math.Round(v*100) < 1000:
		s = fmt.Sprintf("%.2f", v)
	case math.Round(v*10) < 1000:
		s = fmt.Sprintf("%.1f", v)
	default:
		s = fmt.Sprintf("%.0f", v)
	}
	if s == "1000" && u < len(sizeUnits)-1 { // 999.5 kB and up round to the next unit
		s, u = "1.00", u+1
	}
	return s + " " + sizeUnits[u]
}
