package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"vodcluster/acm/boss"
)

// ErrMalformed is wrapped by Parse for a header it cannot decode.
var ErrMalformed = errors.New("auth: malformed Authorization header")

// maxHeader bounds the Authorization value Parse accepts, in bytes.
const maxHeader = 4096

// Parse decodes an Authorization header value sent with a request of
// method (RTSP or HTTP method name) into credentials: Basic gives User and
// Password, Digest gives User and Digest (with Method set). Errors wrap
// ErrMalformed: an unknown scheme, bad base64, a Digest header missing
// username, realm, nonce, uri or response, qop=auth without nc or cnonce,
// or an unsupported qop.
func Parse(header, method string) (boss.Credentials, error) {
	if len(header) > maxHeader {
		return boss.Credentials{}, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxHeader)
	}
	scheme, rest, _ := strings.Cut(strings.TrimSpace(header), " ")
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return boss.Credentials{}, fmt.Errorf("%w: basic: %v", ErrMalformed, err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok || user == "" {
			return boss.Credentials{}, fmt.Errorf("%w: basic: want user:password", ErrMalformed)
		}
		return boss.Credentials{User: user, Password: pass}, nil
	case strings.EqualFold(scheme, "Digest"):
		kv, err := parseParams(rest)
		if err != nil {
			return boss.Credentials{}, err
		}
		d := &boss.DigestResponse{
			Username: kv["username"], Realm: kv["realm"], Nonce: kv["nonce"], URI: kv["uri"],
			Response: strings.ToLower(kv["response"]), Algorithm: kv["algorithm"], QOP: kv["qop"],
			NC: kv["nc"], CNonce: kv["cnonce"], Opaque: kv["opaque"], Method: method,
		}
		if _, ok := kv["realm"]; !ok {
			return boss.Credentials{}, fmt.Errorf("%w: digest without realm", ErrMalformed)
		}
		for _, k := range []string{"username", "nonce", "uri", "response"} {
			if kv[k] == "" {
				return boss.Credentials{}, fmt.Errorf("%w: digest without %s", ErrMalformed, k)
			}
		}
		switch d.QOP {
		case "":
		case "auth":
			if d.NC == "" || d.CNonce == "" {
				return boss.Credentials{}, fmt.Errorf("%w: digest qop=auth without nc or cnonce", ErrMalformed)
			}
		default:
			return boss.Credentials{}, fmt.Errorf("%w: digest qop %q not supported", ErrMalformed, d.QOP)
		}
		return boss.Credentials{User: d.Username, Digest: d}, nil
	default:
		return boss.Credentials{}, fmt.Errorf("%w: scheme %q not supported", ErrMalformed, scheme)
	}
}

// parseParams splits `k1=v1, k2="v 2", ...` (RFC 7235 auth-param list;
// quoted values may hold commas and backslash escapes). Keys are
// lower-cased; a repeated key is an error.
func parseParams(s string) (map[string]string, error) {
	kv := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return kv, nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("%w: parameter without value near %q", ErrMalformed, clip(s))
		}
		key := strings.ToLower(strings.TrimSpace(s[:eq]))
		if strings.ContainsAny(key, " \t\",") {
			return nil, fmt.Errorf("%w: bad parameter name %q", ErrMalformed, clip(key))
		}
		s = strings.TrimLeft(s[eq+1:], " \t")
		var val string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			i, closed := 1, false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(c)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("%w: unterminated quoted value of %s", ErrMalformed, key)
			}
			val, s = b.String(), s[i:]
			s = strings.TrimLeft(s, " \t")
			if s != "" && s[0] != ',' {
				return nil, fmt.Errorf("%w: garbage after value of %s", ErrMalformed, key)
			}
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			val, s = strings.TrimSpace(s[:end]), s[end:]
		}
		if _, dup := kv[key]; dup {
			return nil, fmt.Errorf("%w: parameter %s repeated", ErrMalformed, key)
		}
		kv[key] = val
	}
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// Challenge returns the WWW-Authenticate values of a 401 for realm:
// Digest (MD5, qop "auth", with nonce; stale=true when the client's nonce
// had expired) first, as clients that support both pick the first Digest,
// and then, when basic is true, Basic.
func Challenge(realm, nonce string, stale, basic bool) []string {
	d := fmt.Sprintf(`Digest realm="%s", nonce="%s", algorithm=MD5, qop="auth"`, quote(realm), nonce)
	if stale {
		d += ", stale=true"
	}
	out := []string{d}
	if basic {
		out = append(out, BasicChallenge(realm))
	}
	return out
}

// BasicChallenge returns the WWW-Authenticate value offering Basic for
// realm (RFC 7617).
func BasicChallenge(realm string) string {
	return fmt.Sprintf(`Basic realm="%s"`, quote(realm))
}

// BearerChallenge returns the WWW-Authenticate value refusing a bearer
// token (a subscriber token) for realm: error="invalid_token" with the
// reason as error_description (RFC 6750 section 3).
func BearerChallenge(realm, reason string) string {
	return fmt.Sprintf(`Bearer realm="%s", error="invalid_token", error_description="%s"`, quote(realm), quote(reason))
}

func quote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}
