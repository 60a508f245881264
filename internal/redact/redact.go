// Package redact keeps secrets out of what ralph writes: the values of
// environment variables whose names say they are secret (API keys, tokens,
// passwords) are replaced by a marker naming the variable, wherever they
// appear in the ledger, prd.json, --json output, error messages or the
// agent's output as ralph shows it (Writer).
package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
)

// secretEnds are what a word of a variable's name ends in when the name
// says the variable holds a secret (see isSecretName).
var secretEnds = []string{"KEY", "KEYS", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS",
	"AUTH", "COOKIE", "COOKIES", "CREDENTIAL", "CREDENTIALS", "CREDS", "SESSIONID"}

// isSecretName reports whether a variable's name says it holds a secret.
// It is read as words, cut at '_', '-' and '.', in any case: a secret's
// name has a word that ends in one of secretEnds (API_KEY, GHTOKEN,
// PGPASSWORD, BASICAUTH, sessionCookie), begins with PASS (PASSPHRASE),
// or is PRIVATE or AUTHORIZATION, or the words SESSION and ID in a row.
// Words, not any part of the name: the values of GIT_AUTHOR_NAME
// ("Jonathan Smith") and XDG_SESSION_TYPE ("wayland") are words a person
// writes in a story, not secrets to blank out of it.
func isSecretName(name string) bool {
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	for i, w := range words {
		if w == "PRIVATE" || w == "AUTHORIZATION" || strings.HasPrefix(w, "PASS") ||
			slices.ContainsFunc(secretEnds, func(end string) bool { return strings.HasSuffix(w, end) }) ||
			w == "SESSION" && i+1 < len(words) && words[i+1] == "ID" {
			return true
		}
	}
	return false
}

// minLen is the shortest value taken for a secret: shorter ones ("1",
// "true") would blank out ordinary text.
const minLen = 6

// Redactor replaces known secret values.
type Redactor struct {
	r       *strings.Replacer
	secrets []secret // longest value first
}

type secret struct {
	name, value string
	bytes       []byte // value, for Writer
	anchor      int    // where in value its least common byte is (see index)
}

func newSecret(name, value string) secret {
	anchor := len(value) - 1
	for i := len(value) - 1; i >= 0; i-- {
		if commonness(value[i]) < commonness(value[anchor]) {
			anchor = i
		}
	}
	return secret{name, value, []byte(value), anchor}
}

// commonness ranks a byte by how often it comes in a program's output:
// higher is more often.
func commonness(c byte) int {
	switch {
	case 'a' <= c && c <= 'z', c == ' ', c == '\n', c == '\t':
		return 3
	case '0' <= c && c <= '9', strings.IndexByte(".,:;/-_()'\"=", c) >= 0:
		return 2
	}
	return 1 // capitals, rarer punctuation, bytes past ASCII
}

// index returns where s first comes in b from from on, or -1. It looks for
// its anchor, the byte of it that comes least often in output, so that an
// output with no secret, which is nearly all, is scanned at the speed of
// bytes.IndexByte.
func (s secret) index(b []byte, from int) int {
	n, k := len(s.bytes), s.anchor
	end := len(b) - n + k + 1 // past where the anchor of an s in b can be
	for i := from + k; i < end; {
		j := bytes.IndexByte(b[i:end], s.bytes[k])
		if j < 0 {
			return -1
		}
		if start := i + j - k; bytes.Equal(b[start:start+n], s.bytes) {
			return start
		}
		i += j + 1
	}
	return -1
}

// New collects the secrets among env ("NAME=value" pairs).
func New(env ...[]string) *Redactor {
	return NewNamed(nil, env...)
}

// NewNamed is New with the variables in names taken for secrets too,
// whatever their names say.
func NewNamed(names []string, env ...[]string) *Redactor {
	seen := map[string]bool{}
	var secrets []secret
	for _, list := range env {
		for _, kv := range list {
			name, value, ok := strings.Cut(kv, "=")
			secretNamed := isSecretName(name) || slices.Contains(names, name)
			if !ok || len(value) < minLen || !secretNamed || seen[value] {
				continue
			}
			seen[value] = true
			secrets = append(secrets, newSecret(name, value))
			// The forms the value takes where ralph shows it: on one line
			// (textcut.OneLine, an agent's tool lines), or in JSON (a
			// tool's input shown as it came).
			for _, v := range forms(value) {
				if len(v) >= minLen && !seen[v] {
					seen[v] = true
					secrets = append(secrets, newSecret(name, v))
				}
			}
		}
	}
	if len(secrets) == 0 {
		return &Redactor{}
	}
	// Longer values first, so that a secret containing another is replaced
	// whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i].value) > len(secrets[j].value) })
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s.value, Marker(s.name))
	}
	return &Redactor{r: strings.NewReplacer(pairs...), secrets: secrets}
}

// forms returns value as ralph may show it besides as it is: its runs of
// whitespace collapsed to one space, escaped as in a JSON string, and, of
// a value of several lines (a PEM key), each line, since what ralph reads
// line by line (a check's failure lines) holds them apart.
func forms(value string) []string {
	oneLine := strings.Join(strings.Fields(value), " ")
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(value) // a string always encodes
	quoted := strings.TrimSuffix(b.String(), "\n")
	fs := []string{oneLine, quoted[1 : len(quoted)-1]}
	if strings.Contains(value, "\n") {
		for line := range strings.Lines(value) {
			fs = append(fs, strings.TrimSpace(line))
		}
	}
	return fs
}

// Marker is what a secret's value is replaced with.
func Marker(name string) string { return "[redacted " + name + "]" }

// String returns s with every secret replaced, and the start of one that
// ends where s was cut short with an ellipsis (see textcut), as a message
// or a tool line is: at least minPiece bytes of it.
func (r *Redactor) String(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	s = r.r.Replace(s)
	if !strings.Contains(s, ellipsis) {
		return s
	}
	var b strings.Builder
	for {
		before, after, found := strings.Cut(s, ellipsis)
		b.WriteString(r.cutEnd(before))
		if !found {
			return b.String()
		}
		b.WriteString(ellipsis)
		s = after
	}
}

// ellipsis marks where ralph cut a text short.
const ellipsis = "…"

// cutEnd returns s with its end replaced when it is the start of a secret,
// at least minPiece bytes of it.
func (r *Redactor) cutEnd(s string) string {
	if n, name := r.startOfSecret([]byte(s)); n >= minPiece {
		return s[:len(s)-n] + Marker(name)
	}
	return s
}

// startOfSecret returns the length of the longest end of b that begins a
// secret without being all of it, and the secret's name; 0 when none does.
func (r *Redactor) startOfSecret(b []byte) (n int, name string) {
	if len(r.secrets) == 0 {
		return 0, ""
	}
	// The secrets are sorted longest first.
	for n := min(len(b), len(r.secrets[0].value)-1); n > 0; n-- {
		end := b[len(b)-n:]
		for _, s := range r.secrets {
			if n < len(s.value) && end[0] == s.value[0] && string(end) == s.value[:n] {
				return n, s.name
			}
		}
	}
	return 0, ""
}

// minPiece is the shortest end of a secret that Cut takes for one: fewer
// bytes tell next to nothing, and would be found at the start of ordinary
// text.
const minPiece = 4

// Cut is String for a text that begins where a longer one was cut off, such
// as the last bytes of a command's output: a secret cut in two leaves its
// end at the start, past String's recognising. Cut replaces that end too,
// the longest one found, when it is at least minPiece bytes long.
func (r *Redactor) Cut(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	// Whole secrets first: one that begins and ends alike (a PEM key's
	// dashes) must not be taken for its own end.
	s = r.String(s)
	for n := min(len(r.secrets[0].value)-1, len(s)); n >= minPiece; n-- {
		for _, sec := range r.secrets {
			if n < len(sec.value) && strings.HasPrefix(s, sec.value[len(sec.value)-n:]) {
				return Marker(sec.name) + s[n:]
			}
		}
	}
	return s
}

// Strings redacts each element of list in place and returns it.
func (r *Redactor) Strings(list []string) []string {
	for i, s := range list {
		list[i] = r.String(s)
	}
	return list
}
