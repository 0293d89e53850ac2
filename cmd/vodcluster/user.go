package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"vodcluster/acm"
	"vodcluster/acm/boss"
)

// usersDoc mirrors the users file (realm + users) for editing.
type usersDoc struct {
	Realm string      `yaml:"realm"`
	Users []boss.User `yaml:"users"`
}

func userCmd() *cobra.Command {
	var realm, file string
	var packages []string
	cmd := &cobra.Command{
		Use:   "user NAME",
		Short: "Add or replace a subscriber in a users file (bcrypt hash for Basic, HA1 for Digest); the password is read from stdin",
		Long: "user reads NAME's password from the first line of stdin (on a terminal it asks for it and\n" +
			"does not echo it) and writes a users file with NAME added (or replaced): to --file,\n" +
			"created if missing, or to stdout. The file never holds the password: a bcrypt hash for\n" +
			"Basic and the Digest HA1 for the realm.",
		Example: "  echo 's3cret' | vodcluster user alice --package basic --package premium --file users.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pw, err := readPassword(cmd, args[0])
			if pw == "" {
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("no password on stdin: %w", err)
				}
				return errors.New("no password on stdin: give it on the first line (echo 's3cret' | vodcluster user NAME ...)")
			}
			if slices.ContainsFunc(packages, func(p string) bool { return strings.TrimSpace(p) == "" }) || len(packages) == 0 {
				return errors.New("--package: an empty package name entitles the subscriber to nothing; name a package, or * for all")
			}
			doc := usersDoc{Realm: realm}
			if file != "" {
				if err := readUsers(file, &doc); err != nil {
					return err
				}
				if doc.Realm != realm && cmd.Flags().Changed("realm") {
					return fmt.Errorf("%s is for realm %q, not %q", file, doc.Realm, realm)
				}
			}
			u, err := boss.NewUser(args[0], pw, doc.Realm, packages) // the bcrypt hash: before the lock
			if err != nil {
				return err
			}
			if file != "" {
				// Read again, edited and replaced by one edit at a time:
				// another may have replaced the file since.
				unlock, err := lockUsersDir(file)
				if err != nil {
					return err
				}
				defer unlock()
				read := doc.Realm
				doc = usersDoc{Realm: realm}
				if err := readUsers(file, &doc); err != nil {
					return err
				}
				if doc.Realm != read {
					return fmt.Errorf("%s: its realm became %q meanwhile (%q before); run the command again", file, doc.Realm, read)
				}
			}
			replaced := false
			for i := range doc.Users {
				if doc.Users[i].Name == u.Name {
					doc.Users[i], replaced = u, true
				}
			}
			if !replaced {
				doc.Users = append(doc.Users, u)
			}
			var buf bytes.Buffer
			if old, err := os.ReadFile(file); file != "" && err == nil && len(bytes.TrimSpace(old)) > 0 {
				// The operator's comments and the other entries stay as
				// they are; only this subscriber's entry is written.
				b, err := editUsers(old, u)
				if err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
				buf.Write(b)
			} else if err := boss.WriteFile(&buf, doc.Realm, doc.Users); err != nil {
				return err
			}
			if _, err := boss.ParseFile(bytes.NewReader(buf.Bytes())); err != nil {
				return err
			}
			if file == "" {
				_, err = cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			if err := replaceFile(file, buf.Bytes()); err != nil {
				return err
			}
			verb := "added"
			if replaced {
				verb = "replaced"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s %s in %s\n", verb, u.Name, filepath.Clean(file))
			return nil
		},
	}
	cmd.Flags().StringVar(&realm, "realm", acm.DefaultRealm, "authentication realm (must match the manager's)")
	cmd.Flags().StringVar(&file, "file", "", "users file to update (created when missing); default: print to stdout")
	cmd.Flags().StringSliceVar(&packages, "package", []string{boss.AllPackages}, "entitlement package (repeatable; * = all)")
	return cmd
}

// readPassword reads the first line of the command's standard input, the
// password of user. On a terminal it asks for it (on standard error) and
// does not echo it; an interrupt then puts the echo back before the
// process ends.
func readPassword(cmd *cobra.Command, user string) (string, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok {
		if restore, tty := noEcho(f); tty {
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			done := make(chan struct{})
			defer func() {
				signal.Stop(sig)
				close(done)
				restore()
			}()
			go func() {
				select {
				case <-sig:
					restore()
					fmt.Fprintln(cmd.ErrOrStderr())
					os.Exit(130)
				case <-done:
				}
			}()
			fmt.Fprintf(cmd.ErrOrStderr(), "password for %s (not echoed): ", user)
		}
	}
	pw, err := bufio.NewReader(in).ReadString('\n')
	return strings.TrimRight(pw, "\r\n"), err
}

// readUsers decodes an existing users file strictly; a missing file is empty.
func readUsers(path string, doc *usersDoc) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := boss.ParseFile(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// editUsers returns the users file b with u in it: in place of the entry
// of the same name, or appended to users. The rest of the file (its
// comments, the order and layout of the other entries) is kept; so are
// the comments about a replaced entry. b has been read by readUsers.
func editUsers(b []byte, u boss.User) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a users file (realm: and users:)")
	}
	root := doc.Content[0]
	var users *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "users" {
			users = root.Content[i+1]
		}
	}
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
			entry.HeadComment, entry.LineComment, entry.FootComment = n.HeadComment, n.LineComment, n.FootComment
			users.Content[i], replaced = entry, true
		}
	}
	if !replaced {
		users.Content = append(users.Content, entry)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// replaceFile writes b to path through a temporary file renamed over it,
// so a reader never sees half a file. An existing file's mode and owner
// are kept (the manager's service account reads the users file, e.g.
// root:vodcluster 0640); a new file gets 0600.
func replaceFile(path string, b []byte) error {
	mode := os.FileMode(0o600)
	old, statErr := os.Stat(path)
	if statErr == nil {
		mode = old.Mode().Perm()
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil { // WriteFile's mode is masked by the umask
		os.Remove(tmp)
		return err
	}
	if statErr == nil {
		if err := keepOwner(tmp, old); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("%s: keep its owner: %w", path, err)
		}
	}
	return os.Rename(tmp, path)
}
