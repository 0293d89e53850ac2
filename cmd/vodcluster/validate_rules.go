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
// as given, names the rule). A rule of lsm's or smm's own (an order
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
		if e := check(without.Interface()); e == nil || e.Error() != err.Error() {
			keys = append(keys, prefix+tag)
		}
	}
	return keys
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
