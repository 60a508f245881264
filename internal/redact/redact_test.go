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
