package main

import (
	"fmt"
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

// otherFactors are the factors fixedByOther scales a number by: the
// value twice, half, a tenth more or less, ten times, a tenth of it.
var otherFactors = []float64{2, 0.5, 1.1, 1 / 1.1, 10, 0.1}

// fixedByOther reports whether check passes on section (a copy, changed
// here) with field i set to another value than was (a number scaled by
// otherFactors; other kinds have none). A key set exactly to its default
// breaks a rule all the same (normal 0.95 above overload 0.9, the
// default), yet leaving it out changes nothing: another value that lets
// the rule pass says the key is one it is about. A key the rule is not
// about never makes it pass.
func fixedByOther(section reflect.Value, i int, was reflect.Value, check func(section any) error) bool {
	f := section.Field(i)
	for _, k := range otherFactors {
		switch {
		case f.CanFloat():
			f.SetFloat(was.Float() * k)
		case f.CanInt():
			n := int64(float64(was.Int()) * k)
			if n == was.Int() {
				continue
			}
			f.SetInt(n)
		default:
			return false
		}
		if check(section.Interface()) == nil {
			return true
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
