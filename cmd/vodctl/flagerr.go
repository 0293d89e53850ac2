package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError is vodctl's FlagErrorFunc: a value a number or boolean flag
// cannot take is one line naming the flag, the value and what it takes
// (`--weight "abc": want a whole number: scheduling weight, ...`), not
// pflag's and strconv's words ("invalid argument \"abc\" for \"--weight\"
// flag: strconv.ParseInt: parsing \"abc\": invalid syntax"). Other flag
// errors (an unknown flag, a value missing) are left as they are; a flag
// type of vodctl's own that says what it takes after the value quoted
// (durflag) loses pflag's words before it. A number beyond what the
// flag's type holds says the type's range ("want a whole number from
// -2147483648 to 2147483647").
func flagError(_ *cobra.Command, err error) error {
	var inv *pflag.InvalidValueError
	if !errors.As(err, &inv) {
		return err
	}
	f := inv.GetFlag()
	var want string
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		want = "a whole number"
	case "float32", "float64":
		want = "a number"
	case "bool":
		want = "true or false"
	default:
		if c := inv.Unwrap(); c != nil && strings.HasPrefix(c.Error(), strconv.Quote(inv.GetValue())) {
			// vodctl's own flag types (durflag) say what they take
			// after the value quoted: without pflag's words before.
			return fmt.Errorf("--%s %v", f.Name, c)
		}
		return err
	}
	var num *strconv.NumError
	if errors.As(err, &num) && errors.Is(num.Err, strconv.ErrRange) {
		want += " " + typeRange(f.Value.Type())
	}
	return fmt.Errorf("--%s %q: want %s: %s", f.Name, inv.GetValue(), want, f.Usage)
}

// typeRange is the range of the values of pflag's number type typ (int32,
// float64, ...), as a flag's error says it: "from -128 to 127", or for
// floats "of magnitude at most 3.4028234663852886e+38".
func typeRange(typ string) string {
	bits := strconv.IntSize
	if n, err := strconv.Atoi(strings.TrimLeft(typ, "intufloa")); err == nil {
		bits = n
	}
	switch {
	case strings.HasPrefix(typ, "float"):
		if bits == 32 {
			return fmt.Sprintf("of magnitude at most %g", math.MaxFloat32)
		}
		return fmt.Sprintf("of magnitude at most %g", math.MaxFloat64)
	case strings.HasPrefix(typ, "uint"):
		return fmt.Sprintf("from 0 to %d", uint64(math.MaxUint64)>>(64-bits))
	}
	return fmt.Sprintf("from %d to %d", int64(math.MinInt64)>>(64-bits), int64(math.MaxInt64)>>(64-bits))
}
