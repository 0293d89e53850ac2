package main

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"vodcluster/acm/boss"
)

// editUsers returns the users file b with u in it: in place of the entry
// of the same name, or appended to the users list. Only the lines of that
// entry are written; every other byte of the file stays as it was: the
// line endings (LF or CRLF), blank lines, the comments (those above the
// replaced entry too, and the one on its name's line), the order and
// layout of the other entries. The
// new entry takes the indentation of the list's entries and the file's
// line ending. A list written in flow style (users: [] or [{...}]), an
// empty or missing list, or an edit whose result would not read back as
// the same users with u in place (a replaced entry defining an anchor
// that another entry's alias names: the alias becomes a copy of what it
// named), is written again from its YAML tree instead: the comments stay
// there, blank lines do not. b has been read
// by readUsers; the error is YAML's or names what is not a users file.
func editUsers(b []byte, u boss.User) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a users file (realm: and users:)")
	}
	if out, ok := spliceUser(b, &doc, u); ok {
		return out, nil
	}
	return reencodeUsers(&doc, lineEnding(b), u)
}

// hasDocument reports whether b holds a YAML document: false for nothing,
// blank lines or comments only.
func hasDocument(b []byte) bool {
	var doc yaml.Node
	return yaml.Unmarshal(b, &doc) != nil || doc.Kind != 0
}

// appendUsersTo returns old, a file with no YAML document in it (its
// comments), followed by a users file of realm and users in old's line
// endings.
func appendUsersTo(old []byte, realm string, users []boss.User) ([]byte, error) {
	var buf bytes.Buffer
	if err := boss.WriteFile(&buf, realm, users); err != nil {
		return nil, err
	}
	eol := lineEnding(old)
	out := slices.Clone(old)
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, eol...)
	}
	return append(out, bytes.ReplaceAll(buf.Bytes(), []byte("\n"), []byte(eol))...), nil
}

// lineEnding is the line ending of b's first line: "\r\n" or "\n".
func lineEnding(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i > 0 && b[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// usersNode is the value of the users key of the document's mapping, or
// nil without one.
func usersNode(doc *yaml.Node) *yaml.Node {
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "users" {
			return root.Content[i+1]
		}
	}
	return nil
}

// spliceUser edits b as text: the lines of u's entry are replaced, or an
// entry is added after the last one. ok is false when the list is not a
// non-empty block sequence or the result does not decode as b's users
// with u in place (a layout this does not follow).
func spliceUser(b []byte, doc *yaml.Node, u boss.User) (out []byte, ok bool) {
	users := usersNode(doc)
	if users == nil || users.Kind != yaml.SequenceNode || users.Style&yaml.FlowStyle != 0 || len(users.Content) == 0 {
		return nil, false
	}
	eol := lineEnding(b)
	lines := strings.SplitAfter(string(b), "\n") // lines[i] is line i+1, with its ending
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	at := -1 // the entry replaced
	for i, n := range users.Content {
		var named struct {
			Name string `yaml:"name"`
		}
		if n.Decode(&named) == nil && named.Name == u.Name {
			at = i
			break
		}
	}
	ref := users.Content[len(users.Content)-1] // the entry whose lines are replaced, or that the new one follows
	if at >= 0 {
		ref = users.Content[at]
	}
	first, dash, ok := dashLine(lines, ref)
	if !ok {
		return nil, false
	}
	last := entryEnd(lines, ref, dash)
	entry, err := renderEntry(u, lines[first-1][:dash], ref.Column-1-dash-1, eol)
	if err != nil {
		return nil, false
	}
	var edited []string
	if c := nameComment(ref); at >= 0 && c != "" {
		// The comment on the name's line is about the subscriber
		// (# household 1234): it stays on the name's line.
		line, rest, _ := strings.Cut(entry, eol)
		entry = line + " " + c + eol + rest
	}
	if at >= 0 {
		if !strings.HasSuffix(lines[last-1], "\n") { // the file's last line, without an ending: so is the entry's
			entry = strings.TrimSuffix(entry, eol)
		}
		edited = slices.Concat(lines[:first-1], []string{entry}, lines[last:])
	} else {
		before := slices.Clone(lines[:last])
		if !strings.HasSuffix(before[last-1], "\n") { // the file's last line: the new one is, without an ending
			before[last-1] += eol
			entry = strings.TrimSuffix(entry, eol)
		}
		edited = slices.Concat(before, []string{entry}, lines[last:])
	}
	out = []byte(strings.Join(edited, ""))
	return out, sameUsersWith(b, out, u)
}

// nameComment is the comment on the line of the entry n's name
// ("- name: bob  # household 1234"), or "".
func nameComment(n *yaml.Node) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, v := n.Content[i], n.Content[i+1]; k.Value == "name" {
			if v.LineComment != "" {
				return v.LineComment
			}
			return k.LineComment
		}
	}
	return ""
}

// dashLine finds the "-" that starts the sequence entry n (a mapping,
// whose position is its first key's): its line (1-based) and the byte
// offset of the dash in it. The dash is on the key's line ("- name: x")
// or alone on an earlier one.
func dashLine(lines []string, n *yaml.Node) (line, dash int, ok bool) {
	if n.Kind != yaml.MappingNode || n.Line < 1 || n.Line > len(lines) {
		return 0, 0, false
	}
	l := lines[n.Line-1]
	if n.Column-1 <= len(l) {
		pre := strings.TrimRight(l[:n.Column-1], " ")
		if strings.HasSuffix(pre, "-") && strings.TrimSpace(pre) == "-" {
			return n.Line, len(pre) - 1, true
		}
	}
	for i := n.Line - 1; i >= 1; i-- {
		t := strings.TrimRight(lines[i-1], " \r\n")
		if strings.TrimSpace(t) == "-" {
			return i, len(t) - 1, true
		}
		if s := strings.TrimSpace(t); s != "" && !strings.HasPrefix(s, "#") {
			break
		}
	}
	return 0, 0, false
}

// entryEnd is the last line of the entry n whose dash is at byte dash:
// the last line of any of its nodes, then lines indented deeper that go
// on a value (a long quoted string). Blank lines and comments after it
// are not the entry's: they stay, above the next entry.
func entryEnd(lines []string, n *yaml.Node, dash int) int {
	last := maxLine(n)
	for last < len(lines) {
		t := strings.TrimRight(lines[last], "\r\n")
		s := strings.TrimLeft(t, " \t")
		if s == "" || strings.HasPrefix(s, "#") || len(t)-len(s) <= dash {
			break
		}
		last++
	}
	return last
}

// maxLine is the greatest line of n and the nodes in it.
func maxLine(n *yaml.Node) int {
	m := n.Line
	for _, c := range n.Content {
		m = max(m, maxLine(c))
	}
	return m
}

// renderEntry writes u as a sequence entry: "- " after indent (what is
// before the dash in the file), the keys after gap spaces past the dash,
// packages as a flow list ([basic, premium]), each line ended by eol.
func renderEntry(u boss.User, indent string, gap int, eol string) (string, error) {
	if strings.TrimLeft(indent, " \t") != "" || gap < 1 {
		return "", errors.New("an entry's layout not followed")
	}
	var n yaml.Node
	if err := n.Encode(u); err != nil {
		return "", err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "packages" {
			n.Content[i+1].Style = yaml.FlowStyle
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	var sb strings.Builder
	keys := indent + strings.Repeat(" ", 1+gap)
	for i, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if i == 0 {
			sb.WriteString(indent + "-" + strings.Repeat(" ", gap) + l + eol)
		} else {
			sb.WriteString(keys + l + eol)
		}
	}
	return sb.String(), nil
}

// sameUsersWith reports whether the users file out holds what old does
// with u in place of its entry of the same name (or added at the end).
func sameUsersWith(old, out []byte, u boss.User) bool {
	var was, is usersDoc
	if yaml.Unmarshal(old, &was) != nil || yaml.Unmarshal(out, &is) != nil {
		return false
	}
	i := slices.IndexFunc(was.Users, func(w boss.User) bool { return w.Name == u.Name })
	if i >= 0 {
		was.Users[i] = u
	} else {
		was.Users = append(was.Users, u)
	}
	return reflect.DeepEqual(was, is)
}

// reencodeUsers writes doc again with u in it, from its YAML tree: the
// comments it holds stay, blank lines and the layout of the other entries
// do not. Lines end with eol.
func reencodeUsers(doc *yaml.Node, eol string, u boss.User) ([]byte, error) {
	root := doc.Content[0]
	users := usersNode(doc)
	if users == nil {
		users = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "users"}, users)
	} else if users.Kind != yaml.SequenceNode { // users: (empty), users: ~
		*users = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", HeadComment: users.HeadComment, LineComment: users.LineComment, FootComment: users.FootComment}
	}
	users.Style = 0 // block: a flow sequence would take the new entry inline
	entry := &yaml.Node{}
	if err := entry.Encode(u); err != nil {
		return nil, err
	}
	replaced := false
	for i, n := range users.Content {
		var named struct {
			Name string `yaml:"name"`
		}
		if n.Decode(&named) == nil && named.Name == u.Name {
			inlineAliasesInto(doc, n)
			entry.HeadComment, entry.LineComment, entry.FootComment = n.HeadComment, n.LineComment, n.FootComment
			if len(n.Content) > 0 && len(entry.Content) > 0 { // a comment above "- name:" is its first key's
				entry.Content[0].HeadComment = n.Content[0].HeadComment
				entry.Content[1].LineComment = nameComment(n)
			}
			users.Content[i], replaced = entry, true
		}
	}
	if !replaced {
		users.Content = append(users.Content, entry)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	if eol != "\n" {
		return bytes.ReplaceAll(buf.Bytes(), []byte("\n"), []byte(eol)), nil
	}
	return buf.Bytes(), nil
}

// inlineAliasesInto replaces each alias outside entry that names a node
// inside it (an anchor the entry defines, as in packages: &std [basic]
// that another entry's packages: *std refers to) with a copy of that
// node, so that entry can be replaced and the others keep what they
// held: the new entry has no anchor, and an alias left to it made a file
// that did not read ("unknown anchor 'std' referenced").
func inlineAliasesInto(doc, entry *yaml.Node) {
	inside := map[*yaml.Node]bool{}
	var mark func(n *yaml.Node)
	mark = func(n *yaml.Node) {
		inside[n] = true
		for _, c := range n.Content {
			mark(c)
		}
	}
	mark(entry)
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == entry {
			return
		}
		if n.Kind == yaml.AliasNode && inside[n.Alias] {
			c := copyNode(n.Alias, inside)
			c.HeadComment, c.LineComment, c.FootComment = n.HeadComment, n.LineComment, n.FootComment
			*n = *c
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
}

// copyNode is a deep copy of n without anchors or comments, the aliases
// in it to nodes inside (an entry to be replaced) copied too.
func copyNode(n *yaml.Node, inside map[*yaml.Node]bool) *yaml.Node {
	if n.Kind == yaml.AliasNode && inside[n.Alias] {
		return copyNode(n.Alias, inside)
	}
	c := *n
	c.Anchor, c.HeadComment, c.LineComment, c.FootComment = "", "", "", ""
	c.Content = nil
	for _, k := range n.Content {
		c.Content = append(c.Content, copyNode(k, inside))
	}
	return &c
}
