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
	"vodcluster/cmd/internal/fileflag"
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
			"Basic and the Digest HA1 for the realm. Replacing a subscriber (a new password) keeps their\n" +
			"packages unless --package is given; a new subscriber without --package gets * (every title).",
		Example: "  echo 's3cret' | vodcluster user alice --package basic --package premium --file users.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pw, err := readPassword(cmd, args[0])
			if errors.Is(err, errPasswordsDiffer) || errors.Is(err, errNoPasswordTyped) {
				return err
			}
			if pw == "" {
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("no password on stdin: %w", err)
				}
				return errors.New("no password on stdin: give it on the first line (echo 's3cret' | vodcluster user NAME ...)")
			}
			keep := !cmd.Flags().Changed("package") // a replaced subscriber's packages, a new one's *
			if keep {
				packages = []string{boss.AllPackages}
			}
			if slices.ContainsFunc(packages, func(p string) bool { return strings.TrimSpace(p) == "" }) || len(packages) == 0 {
				return errors.New("--package: an empty package name entitles the subscriber to nothing; name a package, or * for all")
			}
			doc := usersDoc{Realm: realm}
			path := file // the file edited: file with its symbolic links followed
			if file != "" {
				if path, err = followLinks(file); err != nil {
					return fileflag.Error("file", file, err)
				}
				if err := readUsers(path, &doc); err != nil {
					return fileflag.Error("file", file, err)
				}
				if doc.Realm != realm && cmd.Flags().Changed("realm") {
					return fmt.Errorf("--file %s is for realm %q, not --realm %q", file, doc.Realm, realm)
				}
			}
			u, err := boss.NewUser(args[0], pw, doc.Realm, packages) // the bcrypt hash: before the lock
			if err != nil {
				return err
			}
			if file != "" {
				// Read again, edited and replaced by one edit at a time:
				// another may have replaced the file since.
				unlock, err := lockUsersDir(path)
				if err != nil {
					return fileflag.Error("file", file, err)
				}
				defer unlock()
				read := doc.Realm
				doc = usersDoc{Realm: realm}
				if err := readUsers(path, &doc); err != nil {
					return fileflag.Error("file", file, err)
				}
				if doc.Realm != read {
					return fmt.Errorf("--file %s: its realm became %q meanwhile (%q before); run the command again", file, doc.Realm, read)
				}
			}
			if i := slices.IndexFunc(doc.Users, func(w boss.User) bool { return w.Name == u.Name }); i >= 0 && keep {
				// A new password is not a new subscription.
				u.Packages = slices.Clone(doc.Users[i].Packages)
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
			old, err := os.ReadFile(path)
			switch {
			case file != "" && err == nil && hasDocument(old):
				// The operator's comments and the other entries stay as
				// they are; only this subscriber's entry is written.
				b, err := editUsers(old, u)
				if err != nil {
					return fmt.Errorf("--file %s: %w", file, err)
				}
				buf.Write(b)
			case file != "" && err == nil && len(bytes.TrimSpace(old)) > 0:
				// Comments only (a file laid out before its first
				// subscriber): they stay, the list follows them.
				b, err := appendUsersTo(old, doc.Realm, doc.Users)
				if err != nil {
					return fileflag.Error("file", file, err)
				}
				buf.Write(b)
			default:
				if err := boss.WriteFile(&buf, doc.Realm, doc.Users); err != nil {
					return err
				}
			}
			if _, err := boss.ParseFile(bytes.NewReader(buf.Bytes())); err != nil {
				if file != "" {
					return fmt.Errorf("--file %s: not changed: the file edited would not read: %w", file, err)
				}
				return err
			}
			if keep && !replaced {
				// The default grants every title: said, so that a
				// forgotten --package does not pass unseen.
				fmt.Fprintf(cmd.ErrOrStderr(), "%s is entitled to every title (no --package: *); --package limits it to the titles of those packages\n", u.Name)
			}
			if file == "" {
				_, err = cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			if err := replaceFile(path, buf.Bytes()); err != nil {
				return fileflag.Error("file", file, err)
			}
			verb := "added"
			if replaced {
				verb = "replaced"
			}
			kept := ""
			if keep && replaced {
				kept = fmt.Sprintf(" (packages kept: [%s]; --package replaces them)", strings.Join(u.Packages, ", "))
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s %s in %s%s\n", verb, u.Name, filepath.Clean(file), kept)
			return nil
		},
	}
	cmd.Flags().StringVar(&realm, "realm", acm.DefaultRealm, "authentication realm (must match the manager's)")
	cmd.Flags().StringVar(&file, "file", "", "users file to update (created when missing); default: print to stdout")
	cmd.Flags().StringSliceVar(&packages, "package", nil, "entitlement package (repeatable; * = all) (default: a replaced subscriber's packages, a new one's *)")
	return cmd
}

// errPasswordsDiffer is readPassword's error when the password typed
// again on a terminal is not the first: nothing is written.
var errPasswordsDiffer = errors.New("the two passwords typed differ; nothing written (run the command again)")

// errNoPasswordTyped is readPassword's error when nothing was typed at
// the prompt on a terminal (Enter, or Ctrl-D, at once): nothing is
// written.
var errNoPasswordTyped = errors.New("no password typed at the prompt (an empty password is not taken); nothing written (run the command again and type one)")

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

// askTwice asks p for user's password and then for it again: an empty
// first answer (Enter or Ctrl-D at once) is errNoPasswordTyped, two that
// differ are errPasswordsDiffer. A first answer ended by Ctrl-D rather
// than Enter is asked again too.
func askTwice(p passwordPrompt, user string) (string, error) {
	pw, err := p.ReadLine(fmt.Sprintf("password for %s (not echoed): ", user))
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("the password typed: %w", err)
	}
	if pw == "" {
		return "", errNoPasswordTyped
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

// readUsers decodes an existing users file strictly; a missing file is
// empty, and so is one with no YAML document in it (nothing, blank lines
// or comments only: a file made beforehand with its owner and mode).
func readUsers(path string, doc *usersDoc) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !hasDocument(b) {
		return nil
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

// followLinks returns the file that path names once its symbolic links
// are followed (up to 40, as the kernel does), so that an edit replaces
// that file and not the link: replaceFile's rename over a link put a
// plain file in the link's place, and the file it pointed to (in a
// configuration repository, say) was left unchanged. A path, or the
// last link's target, that does not exist yet is returned as it is
// named; its directory must exist.
func followLinks(path string) (string, error) {
	for range 40 {
		dir, err := filepath.EvalSymlinks(filepath.Dir(path))
		if err != nil {
			return "", err
		}
		path = filepath.Join(dir, filepath.Base(path))
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Mode()&fs.ModeSymlink == 0) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(dir, to)
		}
		path = to
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// replaceFile writes b to path through a temporary file renamed over it,
// so a reader never sees half a file, and the file is on disk before the
// rename (a crash then leaves the old file or the new one, not an empty
// one). An existing file's mode and owner are kept (the manager's service
// account reads the users file, e.g. root:vodcluster 0640); a new file
// gets 0600. path is not a symbolic link (followLinks).
func replaceFile(path string, b []byte) error {
	mode := os.FileMode(0o600)
	old, statErr := os.Stat(path)
	if statErr == nil {
		mode = old.Mode().Perm()
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode) // the mode of OpenFile is masked by the umask
	}
	if err == nil && statErr == nil {
		if err = keepOwner(tmp, old); err != nil {
			err = fmt.Errorf("%s: keep its owner: %w", path, err)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil { // the rename on disk too
		d.Sync()
		d.Close()
	}
	return nil
}
