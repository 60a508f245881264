package api

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetryHeaders(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		after   time.Duration
		reset   time.Time
	}{
		{"none", nil, 0, time.Time{}},
		{"seconds", map[string]string{"retry-after": "30"}, 30 * time.Second, time.Time{}},
		{"milliseconds win", map[string]string{"retry-after-ms": "1500", "retry-after": "2"}, 1500 * time.Millisecond, time.Time{}},
		{"http date", map[string]string{"retry-after": "Fri, 02 Jan 2026 03:05:05 GMT"}, time.Minute, time.Time{}},
		{"anthropic reset of a used-up limit", map[string]string{
			"anthropic-ratelimit-requests-remaining": "5", "anthropic-ratelimit-requests-reset": "2026-01-02T03:10:00Z",
			"anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": "2026-01-02T04:00:00Z",
		}, 55*time.Minute + 55*time.Second, time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)},
		{"openai reset", map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "6m0s"},
			6 * time.Minute, now.Add(6 * time.Minute)},
		{"a reset in the past", map[string]string{"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "2026-01-02T03:00:00Z"}, 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			after, reset := retryHeaders(h, now)
			if after != tt.after || !reset.Equal(tt.reset) {
				t.Errorf("retryHeaders = %s, %s; want %s, %s", after, reset, tt.after, tt.reset)
			}
		})
	}
}

func TestErrorBody(t *testing.T) {
	tests := []struct{ body, typ, msg string }{
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded"},
		{`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`, "invalid_api_key", "Incorrect API key provided."},
		{`{"error":"model \"llama9\" not found, try pulling it first"}`, "", `model "llama9" not found, try pulling it first`},
		{`{"detail":"Not Found"}`, "", "Not Found"},
		{"404 page not found\n<html>", "", "404 page not found"},
	}
	for _, tt := range tests {
		typ, msg := errorBody([]byte(tt.body))
		if typ != tt.typ || msg != tt.msg {
			t.Errorf("errorBody(%s) = %q, %q; want %q, %q", tt.body, typ, msg, tt.typ, tt.msg)
		}
	}
}

func TestSSEReader(t *testing.T) {
	r := newSSEReader(strings.NewReader(": keep-alive\r\n\r\nevent: a\r\ndata: 1\r\ndata: 2\r\n\r\n\n\ndata:x\n\nevent: b\ndata: {\"cut"))
	for _, want := range []event{{Name: "a", Data: []byte("1\n2")}, {Data: []byte("x")}} {
		ev, err := r.next()
		if err != nil || ev.Name != want.Name || string(ev.Data) != string(want.Data) {
			t.Fatalf("next = %q %q, %v; want %q %q", ev.Name, ev.Data, err, want.Name, want.Data)
		}
	}
	if _, err := r.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("an event cut off: err = %v, want unexpected EOF", err)
	}
	r = newSSEReader(strings.NewReader("data: 1\n\n"))
	r.next()
	if _, err := r.next(); err != io.EOF {
		t.Errorf("at the end: err = %v, want EOF", err)
	}
}

// TestCutOffReply: a tool call cut off by the output limit is answered
// with the reason, so the model can send less.
func TestCutOffReply(t *testing.T) {
	cutOff := strings.Replace(anthropicAnswer("Writing.", [3]string{"call_a", "write_file", `{"path": "big.txt", "content": "aaa`}),
		`"stop_reason":"tool_use"`, `"stop_reason":"max_tokens"`, 1)
	r := &replay{answers: []string{cutOff, anthropicAnswer("Giving up.")}}
	o := runAgent(t, Options{API: Anthropic, BaseURL: serve(t, r), Prompt: "go", MaxOutputTokens: 100})
	if o.code != 0 || len(r.requests) != 2 {
		t.Fatalf("exit %d, %d requests:\n%s", o.code, len(r.requests), o.raw)
	}
	if want := "your reply was cut off at agent.max_output_tokens = 100 tokens"; !strings.Contains(r.requests[1], want) {
		t.Errorf("the second request does not say %q:\n%s", want, r.requests[1])
	}
}

// TestErrorKinds: a status is named as the Anthropic API names it, and an
// error type met in a stream, which has no status, gets the status that
// goes with it.
func TestErrorKinds(t *testing.T) {
	for _, tt := range []struct {
		status int
		kind   string
	}{
		{0, "api_error"},
		{400, "invalid_request_error"},
		{401, "authentication_error"},
		{403, "permission_error"},
		{404, "not_found_error"},
		{413, "request_too_large"},
		{418, "invalid_request_error"},
		{429, "rate_limit_error"},
		{500, "api_error"},
		{502, "api_error"},
		{503, "overloaded_error"},
		{529, "overloaded_error"},
	} {
		if got := (&apiError{Status: tt.status}).kind(); got != tt.kind {
			t.Errorf("kind of %d = %q, want %q", tt.status, got, tt.kind)
		}
	}
	for _, tt := range []struct {
		typ    string
		status int
	}{
		{"invalid_request_error", 400},
		{"authentication_error", 401},
		{"permission_error", 403},
		{"not_found_error", 404},
		{"request_too_large", 413},
		{"rate_limit_error", 429},
		{"overloaded_error", 529},
		{"api_error", 500},
		{"something_new", 500},
	} {
		if got := anthropicStatus(tt.typ); got != tt.status {
			t.Errorf("anthropicStatus(%q) = %d, want %d", tt.typ, got, tt.status)
		}
	}
}
