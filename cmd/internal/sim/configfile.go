package sim

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"vodcluster/cmd/internal/yamlcfg"
	"vodcluster/lsm"
)

// configHeader heads the YAML that WriteConfig prints.
const configHeader = `vodcluster sim configuration: every key, with its value in this run.
Load it with vodcluster sim --config FILE.yaml: keys left out keep their
defaults, unknown keys are errors, and flags given with --config override
the file. Durations are Go durations ("90s", "1h30m") or whole days and
then, optionally, one ("2d", "1d12h"); rates in bit/s.
scheduler.origin_channels null: the cdp channels.`

// LoadFile overlays the YAML file at path on c. Unknown keys, bad values
// and a second document (after ---; an empty one is ignored) are errors
// naming the file; an unknown key's
// error gives its line and section, the key it may have meant (a flag's
// name, or a key of another section) and points to --print-config.
// Durations are taken as the duration flags take them (Go's form, or
// whole days: "2d", "1d12h"); the errors about the file's values (a
// duration, a whole number or any other value out of range) are "PATH:
// line N: KEY VALUE: reason" with the value as written and the key named
// by keyName ("cdp.setup_delay (--cdp-setup)", "days"), as the other
// commands' --config files say them (yamlcfg, File.Show).
func (c *Config) LoadFile(path string) error {
	f, err := c.loadFile(path)
	if err != nil {
		return err
	}
	return fileValuesError(path, c.validate(fileShow(f)))
}

// loadFile is LoadFile without the check of the values' ranges: the
// file's read, *File for their errors.
func (c *Config) loadFile(path string) (*yamlcfg.File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err == nil {
		if err := checkKeys(&doc, reflect.TypeOf(Config{}), ""); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	f, err := yamlcfg.Decode(b, c, yamlcfg.Options{DurationKey: keyName, Key: keyName})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// fileShow names a value of f's configuration as f writes it, at its
// line (File.Show), its key by keyName.
func fileShow(f *yamlcfg.File) showFunc {
	return func(path string, v any) string { return f.Show(path, keyName(path), v) }
}

// fileValuesError is err, validate's error about the values of the
// --config file at path, said with the file's name first; nil stays nil.
func fileValuesError(path string, err error) error {
	if err == nil {
		return nil
	}
	return &fileError{msg: path + ": " + strings.TrimPrefix(err.Error(), "sim: "), err: err}
}

// fileError is an error about the values of a --config file, said with
// the file's name first; it unwraps to the error about the values.
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.err }

// itemIndex is a list item's index in a path ("demand.kinds[1].share").
var itemIndex = regexp.MustCompile(`\[[0-9]+\]`)

// unindexed is path without its items' indexes, as Options has it:
// "demand.kinds[].share" for "demand.kinds[1].share", "sites.aware" for
// "sites.aware[0]".
func unindexed(path string) string {
	return strings.TrimSuffix(itemIndex.ReplaceAllString(path, "[]"), "[]")
}

// keyName names the key of the file at path (yamlcfg.Options: a list's
// items as "cluster.nodes[].count") in messages: by its path, with the
// flag that sets it when the flag's name is not the key's own
// ("cdp.setup_delay (--cdp-setup)", "demand.zipf_alpha (--zipf)", not
// "scheduler.slow_start (--slow-start)").
func keyName(path string) string {
	path = unindexed(path)
	last := path[strings.LastIndexByte(path, '.')+1:]
	var flags []string
	for f, k := range flagKeys {
		if k != path {
			continue
		}
		if f == strings.ReplaceAll(last, "_", "-") {
			return path
		}
		flags = append(flags, f)
	}
	if len(flags) == 0 {
		return path
	}
	sort.Strings(flags)
	return path + " (--" + flags[0] + ")"
}

// WriteConfig writes c as the YAML that LoadFile reads: every key, the
// scheduler's parameters left to lsm's defaults with those defaults
// (origin_channels stays null: the cdp's channels), under a header
// comment on the format. Loaded over Default it gives the same run as c.
func WriteConfig(w io.Writer, c Config) error {
	d := lsm.DefaultConfig()
	p := &c.Scheduler
	setF := func(v **float64, def float64) {
		if *v == nil {
			*v = &def
		}
	}
	setF(&p.A, d.A)
	setF(&p.B, d.B)
	setF(&p.Normal, d.Normal)
	setF(&p.Overload, d.Overload)
	setF(&p.CHBLFactor, d.CHBLFactor)
	setF(&p.DiskPressure, d.DiskPressure)
	setF(&p.LARDLow, d.LARDLow)
	setF(&p.LARDHigh, d.LARDHigh)
	if p.SlowStart == nil {
		p.SlowStart = &d.SlowStart
	}
	if p.FillRefBps == nil {
		p.FillRefBps = &d.FillRefBps
	}
	var doc yaml.Node
	if err := doc.Encode(&c); err != nil {
		return err
	}
	doc.HeadComment = configHeader
	yamlcfg.WriteDurations(&doc, reflect.TypeOf(c)) // "30d", "1m30s", not "720h0m0s"
	if h := findKey(&doc, "demand", "hourly"); h != nil {
		h.Style = yaml.FlowStyle // 24 numbers on a line
	}
	for _, c := range []struct{ path, comment string }{
		{"policies", "empty: every scheduling policy"},
		{"storage_policies", "empty: storage_policy alone"},
		{"sites.aware", "with sites.count >= 2; empty: all"},
	} {
		if v := findKey(&doc, strings.Split(c.path, ".")...); v != nil {
			v.Style, v.LineComment = yaml.FlowStyle, c.comment
		}
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

// findKey returns the value of the mapping n at path, or nil.
func findKey(n *yaml.Node, path ...string) *yaml.Node {
	for _, k := range path {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// checkKeys reports the first key of n that type t has no field for, by
// its line and section, or nil. Values are left to the decoder.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkKeys(c, t, path); err != nil {
				return err
			}
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, c := range n.Content {
			if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Value == "<<" { // a merge key: its mapping is checked where it is defined
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				return unknownKey(k, path)
			}
			if err := checkKeys(n.Content[i+1], ft, joinKey(path, k.Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlFields returns the YAML keys of struct type t with their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

// joinKey returns key under section path ("" is the top level).
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unknownKey is the error for key k, unknown in section path.
func unknownKey(k *yaml.Node, path string) error {
	where := "at the top level"
	if path != "" {
		where = "in " + path
	}
	hint := ""
	if want := keyFor(k.Value); len(want) > 0 {
		hint = " (did you mean " + strings.Join(want, " or ") + "?)"
	}
	return fmt.Errorf("line %d: unknown key %q %s%s; `vodcluster sim --print-config` writes every key with its default, in its section", k.Line, k.Value, where, hint)
}

// flagKeys are the file's keys of the flags that set a key.
var flagKeys = map[string]string{
	"seed": "seed", "days": "days", "warmup-days": "warmup_days",
	"policy": "policies", "policies": "policies",
	"storage": "storage_policy", "storage-policies": "storage_policies",
	"subscribers": "demand.subscribers", "sessions-per-subscriber": "demand.sessions_per_subscriber",
	"titles": "demand.titles", "zipf": "demand.zipf_alpha", "new-titles": "demand.new_titles_per_day",
	"nodes": "cluster.nodes[].count", "disk-share": "cluster.disk_share",
	"cdp-channels": "cdp.channels", "cdp-channel-bps": "cdp.channel_bps", "cdp-setup": "cdp.setup_delay",
	"failures": "failures.per_day",
	"sites":    "sites.count", "site-local": "sites.local", "site-only": "sites.only", "site-aware": "sites.aware",
	"load-a": "scheduler.a", "load-b": "scheduler.b", "disk-pressure": "scheduler.disk_pressure",
	"fill-ref-bps": "scheduler.fill_ref_bps", "normal": "scheduler.normal", "overload": "scheduler.overload",
	"slow-start": "scheduler.slow_start", "lsm-origin-channels": "scheduler.origin_channels",
	"chbl-factor": "scheduler.chbl_factor",
}

// keyFor returns the keys a misplaced key may stand for: the flag's key
// when it is a flag's name, else every key of that name (dashes read as
// underscores) in any section.
func keyFor(name string) []string {
	if k, ok := flagKeys[name]; ok {
		return []string{k}
	}
	name = strings.ReplaceAll(name, "-", "_")
	var out []string
	for _, k := range configKeys() {
		if k == name || strings.HasSuffix(k, "."+name) {
			out = append(out, k)
		}
	}
	return out
}

// configKeys returns every key of a config file by its path (a list's
// elements as name[]), sorted.
func configKeys() []string {
	var keys []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			walk(t.Elem(), path+"[]")
			return
		}
		if t.Kind() != reflect.Struct || path != "" && t.PkgPath() != reflect.TypeOf(Config{}).PkgPath() {
			return
		}
		for name, ft := range yamlFields(t) {
			k := joinKey(path, name)
			keys = append(keys, k)
			walk(ft, k)
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	sort.Strings(keys)
	return keys
}
