// Package redact keeps secrets out of what ralph writes: the values of
// environment variables whose names say they are secret (API keys, tokens,
// passwords) are replaced by a marker naming the variable, wherever they
// appear in the ledger, prd.json, --json output or error messages.
package redact

import (
	"sort"
	"strings"

	"github.com/ralph-harness/ralph/internal/lazyre"
)

// secretName matches the names of variables that hold secrets.
var secretName = lazyre.New(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIAL|AUTH|PRIVATE|SESSION|COOKIE)`)

// minLen is the shortest value taken for a secret: shorter ones ("1",
// "true") would blank out ordinary text.
const minLen = 6

// Redactor replaces known secret values.
type Redactor struct {
	r *strings.Replacer
}

// New collects the secrets among env ("NAME=value" pairs).
func New(env ...[]string) *Redactor {
	type secret struct{ name, value string }
	seen := map[string]bool{}
	var secrets []secret
	for _, list := range env {
		for _, kv := range list {
			name, value, ok := strings.Cut(kv, "=")
			if !ok || len(value) < minLen || !secretName().MatchString(name) || seen[value] {
				continue
			}
			seen[value] = true
			secrets = append(secrets, secret{name, value})
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
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// Marker is what a secret's value is replaced with.
func Marker(name string) string { return "[redacted " + name + "]" }

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// Strings redacts each element of list in place and returns it.
func (r *Redactor) Strings(list []string) []string {
	for i, s := range list {
		list[i] = r.String(s)
	}
	return list
}
