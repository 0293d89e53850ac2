package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
		Long: "user reads NAME's password from the first line of stdin (on a terminal it asks for it\n" +
			"twice, does not echo it, and stops without writing when the two differ) and writes a users file with NAME added (or replaced): to --file,\n" +
			"created if missing, or to stdout. The file never holds the password: a bcrypt hash for\n" +
			"Basic and the Digest HA1 for the realm.",
		Example: "  echo 's3cret' | vodcluster user alice --package basic --package premium --file users.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pw, err := readPassword(cmd, args[0])
			if errors.Is(err, errPasswordsDiffer) {
				return err
			}
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

// errPasswordsDiffer is readPassword's error when the password typed
// again on a terminal is not the first: nothing is written.
var errPasswordsDiffer = errors.New("the two passwords typed differ; nothing written (run the command again)")

// readPassword reads the password of user. From a pipe or a file it is
// the first line of the command's standard input. On a terminal it asks
// for it twice (on standard error) without echoing it and returns
// errPasswordsDiffer when the two differ; a signal meanwhile (SIGINT,
// SIGQUIT, SIGTERM, SIGTSTP) puts the echo back first (ttyPrompt).
func readPassword(cmd *cobra.Command, user string) (string, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok {
		if t, tty := openTTYPrompt(f, cmd.ErrOrStderr()); tty {
			defer t.Close()
			return askTwice(t, user)
		}
	}
	pw, err := bufio.NewReader(in).ReadString('\n')
	return strings.TrimRight(pw, "\r\n"), err
}

// passwordPrompt asks for a line on a terminal that does not echo it.
type passwordPrompt interface {
	// ReadLine shows prompt and returns the line typed, without its end.
	ReadLine(prompt string) (string, error)
}

// askTwice asks p for user's password and then for it again; an empty
// first answer is returned as it is (the caller refuses it), two that
// differ are errPasswordsDiffer.
func askTwice(p passwordPrompt, user string) (string, error) {
	pw, err := p.ReadLine(fmt.Sprintf("password for %s (not echoed): ", user))
	if err != nil || pw == "" {
		return pw, err
	}
	again, err := p.ReadLine(fmt.Sprintf("password for %s again: ", user))
	if err != nil && again == "" {
		return "", fmt.Errorf("the password typed again: %w", err)
	}
	if again != pw {
		return "", errPasswordsDiffer
	}
	return pw, nil
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
