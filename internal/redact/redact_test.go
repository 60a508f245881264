package redact

import "testing"

func TestRedactor(t *testing.T) {
	r := New([]string{
		"ANTHROPIC_API_KEY=sk-ant-abcdef123456",
		"GITHUB_TOKEN=ghp_0123456789",
		"DB_PASSWORD=hunter22",
		"SHORT_TOKEN=abc",      // too short to be told from ordinary text
		"HOME=/root/secretdir", // not a secret's name
	}, []string{"MY_SECRET=sk-ant-abcdef123456-long"})
	tests := []struct{ in, want string }{
		{"key sk-ant-abcdef123456 used", "key [redacted ANTHROPIC_API_KEY] used"},
		{"sk-ant-abcdef123456-long", "[redacted MY_SECRET]"},
		{"ghp_0123456789 and hunter22", "[redacted GITHUB_TOKEN] and [redacted DB_PASSWORD]"},
		{"abc /root/secretdir", "abc /root/secretdir"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var none *Redactor
	if got := none.String("x"); got != "x" {
		t.Errorf("nil redactor changed the text: %q", got)
	}
	if got := New(nil).String("sk-ant-abcdef123456"); got != "sk-ant-abcdef123456" {
		t.Errorf("empty redactor changed the text: %q", got)
	}
}

// TestCut: a text that begins where an output was cut off loses the end of
// a secret cut in two, as well as whole secrets; a piece shorter than
// minPiece, or one that is not a secret's end, stays.
func TestCut(t *testing.T) {
	r := New([]string{
		"ANTHROPIC_API_KEY=sk-ant-abcdef123456",
		"GITHUB_TOKEN=ghp_0123456789",
	}, []string{"MY_SECRET=sk-ant-abcdef123456-long"})
	tests := []struct{ in, want string }{
		{"def123456 used, and ghp_0123456789", "[redacted ANTHROPIC_API_KEY] used, and [redacted GITHUB_TOKEN]"},
		{"3456-long\nnext", "[redacted MY_SECRET]\nnext"},
		{"6789", "[redacted GITHUB_TOKEN]"},
		{"789 left", "789 left"},     // three bytes: too few to tell
		{"abcdef12 x", "abcdef12 x"}, // a secret's middle, not its end
		{"sk-ant-abcdef123456", "[redacted ANTHROPIC_API_KEY]"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := r.Cut(tt.in); got != tt.want {
			t.Errorf("Cut(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var none *Redactor
	if got := none.Cut("3456"); got != "3456" {
		t.Errorf("nil redactor changed the text: %q", got)
	}
}

// TestNewNamed: a variable named as a secret is one whatever its name.
func TestNewNamed(t *testing.T) {
	env := []string{"LLM_GATEWAY=sk-live-123456", "HOME=/home/someone"}
	if got := New(env).String("key sk-live-123456"); got != "key sk-live-123456" {
		t.Fatalf("New redacted a variable its name does not call secret: %q", got)
	}
	if got, want := NewNamed([]string{"LLM_GATEWAY"}, env).String("key sk-live-123456 at /home/someone"), "key [redacted LLM_GATEWAY] at /home/someone"; got != want {
		t.Errorf("NewNamed: %q, want %q", got, want)
	}
}

// TestShownForms: a secret is found in the forms ralph shows text in: cut
// short with an ellipsis, on one line, escaped as JSON; and one that begins
// as it ends (a PEM key) is replaced whole, not taken for its own end.
func TestShownForms(t *testing.T) {
	pem := "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIFzK\n-----END PRIVATE KEY-----"
	r := New([]string{
		"MY_API_KEY=tok_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
		"MY_PASSWORD=correct  horse\tbattery",
		"DB_PASSWORD=back\\slash\"quote",
		"SSH_PRIVATE_KEY=" + pem,
	})
	tests := []struct{ in, want string }{
		{"→ Bash: echo tok_ABCDEFGHIJKL…", "→ Bash: echo [redacted MY_API_KEY]…"},
		{"a…b tok_ABCD… c…", "a…b [redacted MY_API_KEY]… c…"},
		{"see tok…", "see tok…"}, // three bytes: too few to tell
		{"login --password 'correct horse battery'", "login --password '[redacted MY_PASSWORD]'"},
		{`{"content":"pw=back\\slash\"quote"}`, `{"content":"pw=[redacted DB_PASSWORD]"}`},
		{`{"key":"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIFzK\n-----END PRIVATE KEY-----"}`, `{"key":"[redacted SSH_PRIVATE_KEY]"}`},
		{"-----BEGIN PRIVATE KEY----- MC4CAQAwBQYDK2VwBCIEIFzK -----END PRIVATE KEY-----", "[redacted SSH_PRIVATE_KEY]"},
		{"error: key MC4CAQAwBQYDK2VwBCIEIFzK rejected", "error: key [redacted SSH_PRIVATE_KEY] rejected"}, // a line of it
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for in, want := range map[string]string{
		pem + "\nok":                    "[redacted SSH_PRIVATE_KEY]\nok",
		"-----END PRIVATE KEY-----\nok": "[redacted SSH_PRIVATE_KEY]\nok",
		"Y-----\nok":                    "[redacted SSH_PRIVATE_KEY]\nok",
	} {
		if got := r.Cut(in); got != want {
			t.Errorf("Cut(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSecretNames: a name is a secret's by its words, not by any part of
// it: an author's name or a desktop session's type is ordinary text.
func TestSecretNames(t *testing.T) {
	for name, want := range map[string]bool{
		"ANTHROPIC_API_KEY":     true,
		"OPENAI_APIKEY":         true,
		"GITHUB_TOKEN":          true,
		"GHTOKEN":               true,
		"AWS_SESSION_TOKEN":     true,
		"AWS_SECRET_ACCESS_KEY": true,
		"CLIENT_SECRET":         true,
		"DB_PASSWORD":           true,
		"PGPASSWORD":            true,
		"MYSQL_PWD":             false, // PWD is the working directory's name too
		"SSH_PASSPHRASE":        true,
		"npm_config_auth":       true,
		"GOOGLE_CREDENTIALS":    true,
		"session.cookie":        true,
		"SIGNING_PRIVATE":       true,
		"GIT_AUTHOR_NAME":       false,
		"GIT_AUTHOR_EMAIL":      false,
		"XDG_SESSION_TYPE":      false,
		"XDG_SESSION_DESKTOP":   false,
		"KEYBOARD_LAYOUT":       false,
		"HOME":                  false,
		"PWD":                   false,
		"PASSENGER_COUNT":       true, // the price of PASSPHRASE: a name that begins with PASS
		"DBPASS":                true,
		"SMTPPASS":              true,
		"BASICAUTH":             true,
		"OAUTH":                 true,
		"HTTP_AUTHORIZATION":    true,
		"API_KEYS":              true,
		"sessionCookie":         true,
		"SESSION_ID":            true,
		"PHPSESSID":             false, // no word of it says so
		"SESSION_TYPE":          false,
	} {
		if got := isSecretName(name); got != want {
			t.Errorf("isSecretName(%q) = %v, want %v", name, got, want)
		}
	}
	r := New([]string{"GIT_AUTHOR_NAME=Jonathan Smith", "XDG_SESSION_TYPE=wayland"})
	if in := "Credit Jonathan Smith; fix the crash under wayland"; r.String(in) != in {
		t.Errorf("String(%q) = %q: ordinary words redacted", in, r.String(in))
	}
}
