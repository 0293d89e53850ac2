package boss

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// User is one subscriber of a users file. It never holds the password:
// Bcrypt is the bcrypt hash used for Basic, HA1 the Digest
// MD5(name:realm:password) in hex used for Digest; either may be empty
// to refuse that scheme, not both.
type User struct {
	Name     string   `yaml:"name"`
	Bcrypt   string   `yaml:"bcrypt,omitempty"`
	HA1      string   `yaml:"ha1,omitempty"`
	Packages []string `yaml:"packages"` // entitlement packages; "*" is every package
}

// AllPackages in a user's Packages entitles them to every package.
const AllPackages = "*"

// NewUser returns the users-file entry for name with password in realm
// (bcrypt at bcrypt.DefaultCost, and the Digest HA1), holding packages.
// It fails on an empty or malformed name or an empty password.
func NewUser(name, password, realm string, packages []string) (User, error) {
	return NewUserCost(name, password, realm, packages, bcrypt.DefaultCost)
}

// NewUserCost is NewUser with a bcrypt cost (bcrypt.MinCost to
// bcrypt.MaxCost; every step doubles the work of each Basic check that
// misses the cache).
func NewUserCost(name, password, realm string, packages []string, cost int) (User, error) {
	if err := checkName(name); err != nil {
		return User{}, err
	}
	if password == "" {
		return User{}, fmt.Errorf("boss: user %q: empty password", name)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return User{}, fmt.Errorf("boss: user %q: %w", name, err)
	}
	return User{Name: name, Bcrypt: string(h), HA1: HA1(name, realm, password), Packages: slices.Clone(packages)}, nil
}

// fileDoc is the YAML document of a users file.
type fileDoc struct {
	Realm string `yaml:"realm"` // the Digest realm the HA1 values were made for
	Users []User `yaml:"users"`
}

// Defaults of the Basic credential cache.
const (
	DefaultCacheTTL  = 10 * time.Minute // how long a verified Basic credential is trusted (a reloaded users file starts a new cache)
	DefaultCacheSize = 65536            // entries at most (about 100 bytes each)
)

// File is the users-file BOSS backend. It is safe for concurrent use.
type File struct {
	realm string
	users map[string]*User

	cacheTTL  time.Duration
	cacheSize int
	now       func() time.Time

	dummy func() []byte // bcrypt hash compared against for unknown users

	mu    sync.Mutex
	cache map[[sha256.Size]byte]time.Time // verified Basic credential -> expiry
}

var _ BOSS = (*File)(nil)

// LoadFile reads a users file (see ParseFile); its errors of the file's
// content are "PATH: line N: ...".
func LoadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("boss: %w", err)
	}
	f, err := ParseFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ParseFile decodes a users file strictly (an unknown field is an error):
//
//	realm: vodcluster
//	users:
//	  - name: demo
//	    bcrypt: $2a$10$...
//	    ha1: 1f2e...   # MD5(demo:vodcluster:password) in hex
//	    packages: ["*"]
//
// A syntax error, an unknown field and a bad user entry are reported with
// their line, on one line ("line 7: unknown key pakages (misspelt, or
// under the wrong section?)"; several joined by "; "; fileError).
func ParseFile(r io.Reader) (*File, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var doc fileDoc
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("empty users file")
		}
		return nil, fileError(err)
	}
	// The same document again, for the line of each user entry.
	var lines struct {
		Users []yaml.Node `yaml:"users"`
	}
	_ = yaml.Unmarshal(b, &lines)
	return newFile(doc.Realm, doc.Users, func(i int) string {
		if i < len(lines.Users) {
			return fmt.Sprintf("line %d: ", lines.Users[i].Line)
		}
		return ""
	})
}

// WriteFile encodes realm and users as a users file that ParseFile reads.
func WriteFile(w io.Writer, realm string, users []User) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(fileDoc{Realm: realm, Users: users}); err != nil {
		return err
	}
	return enc.Close()
}

// NewFile returns a backend holding users, whose HA1 values were made for
// realm. It fails on an empty realm, a duplicate or malformed name, a
// malformed bcrypt hash or HA1, a user with neither, or an empty package
// name.
func NewFile(realm string, users []User) (*File, error) {
	return newFile(realm, users, func(int) string { return "" })
}

// newFile is NewFile with where(i), the prefix of an error about users[i]
// (its line in the file).
func newFile(realm string, users []User, where func(i int) string) (*File, error) {
	if realm == "" {
		return nil, fmt.Errorf("boss: users file without realm")
	}
	f := &File{
		realm:     realm,
		users:     make(map[string]*User, len(users)),
		cacheTTL:  DefaultCacheTTL,
		cacheSize: DefaultCacheSize,
		now:       time.Now,
		cache:     map[[sha256.Size]byte]time.Time{},
	}
	cost := bcrypt.MinCost
	for i := range users {
		u := users[i]
		if err := checkUser(&u); err != nil {
			return nil, fmt.Errorf("%s%w", where(i), err)
		}
		if c, err := bcrypt.Cost([]byte(u.Bcrypt)); err == nil {
			cost = max(cost, c)
		}
		if _, dup := f.users[u.Name]; dup {
			return nil, fmt.Errorf("%sboss: user %q listed twice", where(i), u.Name)
		}
		u.Packages = slices.Clone(u.Packages)
		f.users[u.Name] = &u
	}
	// An unknown name costs as much as a wrong password.
	f.dummy = sync.OnceValue(func() []byte {
		h, _ := bcrypt.GenerateFromPassword([]byte("not a password"), cost)
		return h
	})
	return f, nil
}

func checkName(name string) error {
	if name == "" || len(name) > 256 {
		return fmt.Errorf("boss: user name must have 1 to 256 bytes")
	}
	for _, r := range name {
		if r == ':' || r < 0x20 || r == 0x7f || r == '"' || r == '\\' {
			return fmt.Errorf("boss: user name %q: ':', '\"', '\\' and control characters are not allowed", name)
		}
	}
	return nil
}

func checkUser(u *User) error {
	if err := checkName(u.Name); err != nil {
		return err
	}
	if u.Bcrypt == "" && u.HA1 == "" {
		return fmt.Errorf("boss: user %q has neither bcrypt nor ha1", u.Name)
	}
	if u.Bcrypt != "" {
		if _, err := bcrypt.Cost([]byte(u.Bcrypt)); err != nil {
			return fmt.Errorf("boss: user %q: bcrypt hash: %w", u.Name, err)
		}
	}
	if u.HA1 != "" {
		u.HA1 = strings.ToLower(u.HA1)
		if b, err := hex.DecodeString(u.HA1); err != nil || len(b) != 16 {
			return fmt.Errorf("boss: user %q: ha1 must be 32 hex digits", u.Name)
		}
	}
	for _, p := range u.Packages {
		if p == "" {
			return fmt.Errorf("boss: user %q: empty package name", u.Name)
		}
	}
	return nil
}

// Realm returns the Digest realm the file's HA1 values were made for.
func (f *File) Realm() string { return f.realm }

// Authenticate implements BOSS. Basic: bcrypt comparison, at most
// bcryptSlots at once (waiting for a slot ends with ctx, returning its
// error; a ctx marked WithPriority is given the next free slot first), a success is cached for DefaultCacheTTL, and a check that
// waited for a slot while the same credential was verified takes that
// verification (a burst of one subscriber's requests costs one bcrypt).
// Digest: the response is checked against the
// user's HA1, and the realm must be the file's; the nonce is the caller's
// business (auth.Nonces). Failures wrap ErrUnauthorized.
func (f *File) Authenticate(ctx context.Context, c Credentials) error {
	u := f.users[c.User]
	switch {
	case c.Digest != nil:
		d := c.Digest
		if u == nil || u.HA1 == "" || d.Username != c.User || d.Realm != f.realm ||
			(d.Algorithm != "" && !strings.EqualFold(d.Algorithm, "MD5")) || !d.Verify(u.HA1) {
			return fmt.Errorf("%w: digest for %q", ErrUnauthorized, c.User)
		}
		return nil
	default:
		key := sha256.Sum256([]byte(c.User + "\x00" + c.Password))
		now := f.now()
		if f.verified(key, now) {
			return nil
		}
		// bcrypt is meant to be slow (about 50 ms at cost 10): a burst of
		// first logins (a failover, the evening peak) runs at most
		// bcryptSlots at once, so that it does not starve the manager's
		// other work; the others wait their turn or their client leaves.
		if err := bcryptSlots.acquire(ctx, priority(ctx)); err != nil {
			return err
		}
		defer bcryptSlots.release()
		// A check of the same credential that held a slot meanwhile (the
		// same subscriber's requests at once) may have verified it.
		if f.verified(key, now) {
			return nil
		}
		if u == nil || u.Bcrypt == "" {
			_ = bcrypt.CompareHashAndPassword(f.dummy(), []byte(c.Password))
			return fmt.Errorf("%w: %q", ErrUnauthorized, c.User)
		}
		if bcrypt.CompareHashAndPassword([]byte(u.Bcrypt), []byte(c.Password)) != nil {
			return fmt.Errorf("%w: wrong password for %q", ErrUnauthorized, c.User)
		}
		f.remember(key, now)
		return nil
	}
}

// verified reports whether the Basic credential key was verified and its
// cache entry is still good at now.
func (f *File) verified(key [sha256.Size]byte, now time.Time) bool {
	f.mu.Lock()
	exp, ok := f.cache[key]
	f.mu.Unlock()
	return ok && now.Before(exp)
}

// remember caches a verified Basic credential, keeping at most cacheSize
// entries: expired ones go first, then arbitrary ones.
func (f *File) remember(key [sha256.Size]byte, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cache) >= f.cacheSize {
		for k, exp := range f.cache {
			if !now.Before(exp) {
				delete(f.cache, k)
			}
		}
		for k := range f.cache {
			if len(f.cache) < f.cacheSize {
				break
			}
			delete(f.cache, k)
		}
	}
	f.cache[key] = now.Add(f.cacheTTL)
}

// Entitled implements BOSS: whether user's packages hold pkg or "*". It
// fails with ErrUnknownUser.
func (f *File) Entitled(_ context.Context, user, pkg string) (bool, error) {
	u := f.users[user]
	if u == nil {
		return false, fmt.Errorf("%w: %q", ErrUnknownUser, user)
	}
	return slices.Contains(u.Packages, AllPackages) || slices.Contains(u.Packages, pkg), nil
}

// PackageLister is implemented by a BOSS that can list its subscribers'
// packages (a users file): the manager checks them against the catalog
// (a package no title is in entitles its holders to nothing).
type PackageLister interface {
	// PackageHolders returns each package some subscriber holds (AllPackages
	// left out) with the names of its holders, sorted.
	PackageHolders() map[string][]string
}

var _ PackageLister = (*File)(nil)

// PackageHolders implements PackageLister.
func (f *File) PackageHolders() map[string][]string {
	out := map[string][]string{}
	for name, u := range f.users {
		for _, p := range u.Packages {
			if p != AllPackages && !slices.Contains(out[p], name) {
				out[p] = append(out[p], name)
			}
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}
