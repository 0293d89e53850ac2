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
	return scaledText(float64(b), sizeUnits)
}

// rateUnits are the decimal units of bitRateText, each 1000 times the
// one before.
var rateUnits = []string{"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"}

// bitRateText is a rate in bit/s as vodctl popularity shows a demand: in
// the largest decimal unit that leaves at least one integer digit, to
// three significant digits ("347 kbit/s", "2.31 kbit/s", "128 bit/s"),
// below 1 bit/s to three significant digits too ("0.0417 bit/s"): the
// demand of a title asked for a few times an hour is a few bit/s, which
// "0.000" Mbit/s showed as none. 0 (or less) is "0 bit/s". --json keeps
// the exact bit/s.
func bitRateText(bps float64) string {
	if !(bps > 0) {
		return "0 bit/s"
	}
	if bps < 1 {
		return strconv.FormatFloat(bps, 'g', 3, 64) + " bit/s"
	}
	return scaledText(bps, rateUnits)
}

// scaledText writes v (at least 1) in the largest of units (each 1000
// times the one before) that leaves at least one integer digit, to three
// significant digits as rounded (9.996 is "10.0", not "10.00"; 999.5 of
// one unit is "1.00" of the next).
func scaledText(v float64, units []string) string {
	u := 0
	for v >= 1000 && u < len(units)-1 {
		v /= 1000
		u++
	}
	var s string
	switch {
	case math.Round(v*100) < 1000:
		s = fmt.Sprintf("%.2f", v)
	case math.Round(v*10) < 1000:
		s = fmt.Sprintf("%.1f", v)
	default:
		s = fmt.Sprintf("%.0f", v)
	}
	if s == "1000" && u < len(units)-1 {
		s, u = "1.00", u+1
	}
	return s + " " + units[u]
}
