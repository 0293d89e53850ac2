package main

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// ruleKeys returns the keys of section (a struct of yaml-tagged fields,
// under prefix: "scheduler.") that a rule over its values, check, fails
// on: each key set (not its zero value) without which, left out, check
// passes or fails with another error (err, check's error with every key
// as given, names the rule), or, when leaving it out changes nothing (it
// is set to its default), with another value of which check passes
// (fixedByOther). A rule of lsm's or smm's own (an order
// between two keys, a name it does not know) is so named by the keys
// that break it, without repeating the rule here. nil when no key alone
// is to blame (the rule fails on the defaults).
func ruleKeys(prefix string, section any, err error, check func(section any) error) []string {
	v := reflect.ValueOf(section)
	t := v.Type()
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || tag == "" || tag == "-" || v.Field(i).IsZero() {
			continue
		}
		without := reflect.New(t).Elem()
		without.Set(v)
		without.Field(i).SetZero()
		if e := check(without.Interface()); e == nil || e.Error() != err.Error() || fixedByOther(without, i, v.Field(i), check) {
			keys = append(keys, prefix+tag)
		}
	}
	return keys
}

// otherFactors are the factors fixedByOther scales a number by, each
// both ways (times and divided by): a hundredth, a tenth and a half more,
// for a rule that a near value passes (normal 0.95 above overload 0.9,
// the default), and each power of ten up to 10^18, for one that only a
// far value passes (retry_base 1d above retry_max 30m, the default).
var otherFactors = func() []float64 {
	f := []float64{1.01, 1.1, 1.5}
	for k := 10.0; k <= 1e18; k *= 10 {
		f = append(f, k)
	}
	return f
}()

// fixedByOther reports whether check passes on section (a copy, changed
// here) with field i set to another value than was: a number scaled by
// otherFactors, or the value of another field of its type in section (a
// rule that holds only at equality: overload 0.9, the default, with
// normal 1); other kinds have none. An integer the scaling takes out of
// its range is not tried (a conversion would wrap it, at random, to a
// negative one). A key set exactly to its default breaks a rule all the
// same, yet leaving it out changes nothing: another value that lets the
// rule pass says the key is one it is about. A key the rule is not about
// never makes it pass.
func fixedByOther(section reflect.Value, i int, was reflect.Value, check func(section any) error) bool {
	f := section.Field(i)
	if !f.CanFloat() && !f.CanInt() {
		return false
	}
	try := func(set func()) bool {
		set()
		return check(section.Interface()) == nil
	}
	for j := 0; j < section.NumField(); j++ {
		o := section.Field(j)
		if j == i || o.Type() != f.Type() || o.IsZero() || o.Equal(was) {
			continue
		}
		if try(func() { f.Set(o) }) {
			return true
		}
	}
	for _, k := range otherFactors {
		for _, by := range []float64{k, 1 / k} {
			if f.CanFloat() {
				if try(func() { f.SetFloat(was.Float() * by) }) {
					return true
				}
				continue
			}
			p := float64(was.Int()) * by
			if p >= math.Exp2(63) || p < -math.Exp2(63) {
				continue // not an int64: out of range
			}
			n := int64(p)
			if n == was.Int() || f.OverflowInt(n) {
				continue
			}
			if try(func() { f.SetInt(n) }) {
				return true
			}
		}
	}
	return false
}

// blameRule is err, an error of lsm's or smm's own check of section
// (ruleKeys), with the keys that break it first, each as the file writes
// it, at its line ("line 7: scheduler.overload 0.5, line 6:
// scheduler.normal 0.9: lsm: overload threshold ..."), as the range
// errors of single values say them; with no key to blame, what is its
// name ("scheduler: lsm: ...").
func (k *keyCheck) blameRule(what, prefix string, section any, err error, check func(section any) error) error {
	keys := ruleKeys(prefix, section, err, check)
	if len(keys) == 0 {
		return fmt.Errorf("%s: %w", what, err)
	}
	v := reflect.ValueOf(section)
	shown := make([]string, 0, len(keys))
	for _, key := range keys {
		tag := strings.TrimPrefix(key, prefix)
		for i := 0; i < v.NumField(); i++ {
			if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); name == tag {
				shown = append(shown, k.show(key, v.Field(i).Interface()))
			}
		}
	}
	return fmt.Errorf("%s: %w", strings.Join(shown, ", "), err)
}
