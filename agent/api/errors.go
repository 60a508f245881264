package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ralph-harness/ralph/internal/retryafter"
	"github.com/ralph-harness/ralph/internal/textcut"
)

// apiError is a request that failed: refused by the API with an HTTP
// status, or lost on the way (no answer, a stream that broke off, an
// answer that could not be read).
type apiError struct {
	Status  int    // the HTTP status; 0 when there was no answer
	Type    string // the API's error type or code, if it said
	Message string
	Network bool // no usable answer: retried like a server error

	// retryAfter is how long the server asked to wait; reset is when its
	// rate limit lifts. Zero: it did not say.
	retryAfter time.Duration
	reset      time.Time

	attempts int // how many times the request was sent, when given up
}

func (e *apiError) Error() string {
	if e.Status == 0 {
		return "network error: " + e.Message
	}
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Type != "" && e.Type != e.kind() {
		msg = e.Type + ": " + msg
	}
	return fmt.Sprintf("API error %d (%s): %s", e.Status, e.kind(), msg)
}

// errorTypes are the Anthropic API's error types and the HTTP status that
// goes with each.
var errorTypes = []struct {
	status int
	typ    string
}{
	{http.StatusBadRequest, "invalid_request_error"},
	{http.StatusUnauthorized, "authentication_error"},
	{http.StatusForbidden, "permission_error"},
	{http.StatusNotFound, "not_found_error"},
	{http.StatusRequestEntityTooLarge, "request_too_large"},
	{http.StatusTooManyRequests, "rate_limit_error"},
	{529, "overloaded_error"},
}

// kind names the error the way the Anthropic API does, whichever API
// answered, so that ralph's reading of stream-json results knows it.
func (e *apiError) kind() string {
	if e.billing() {
		return "billing_error"
	}
	for _, t := range errorTypes {
		if t.status == e.Status {
			return t.typ
		}
	}
	switch s := e.Status; {
	case s == http.StatusServiceUnavailable:
		return "overloaded_error"
	case s == 0 || s >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// billing: the account's plan or credit ran out, which OpenAI's API says
// with a 429 as it says a rate limit: no wait brings it back.
func (e *apiError) billing() bool {
	return e.Status == http.StatusPaymentRequired || e.Type == "insufficient_quota"
}

// retryable: sending the same request again may well succeed.
func (e *apiError) retryable() bool {
	switch {
	case e.billing():
		return false
	case e.Network, e.Status >= 500:
		return true
	}
	switch e.Status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return false
}

// hinted: the server said how long to wait.
func (e *apiError) hinted() bool { return e.retryAfter > 0 || !e.reset.IsZero() }

// wait is how long the server asked to wait from now; 0 when it did not.
func (e *apiError) wait(now time.Time) time.Duration {
	if e.retryAfter > 0 {
		return e.retryAfter
	}
	if !e.reset.IsZero() {
		if d := e.reset.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// resetAt is when the server said the request may be sent again; zero
// when it did not.
func (e *apiError) resetAt(now time.Time) time.Time {
	if !e.reset.IsZero() {
		return e.reset
	}
	if e.retryAfter > 0 {
		t := now.Add(e.retryAfter)
		if r := t.Truncate(time.Second); !r.Equal(t) {
			t = r.Add(time.Second) // never earlier than the server said
		}
		return t
	}
	return time.Time{}
}

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

// httpError reads a refused request's answer: the error body, in either
// API's shape ({"type":"error","error":{"type","message"}} or
// {"error":{"message","type","code"}}), or its first line of text, and the
// headers that say when to try again.
func httpError(resp *http.Response, body []byte, now time.Time) *apiError {
	e := &apiError{Status: resp.StatusCode}
	e.Type, e.Message = errorBody(body)
	e.retryAfter, e.reset = retryHeaders(resp.Header, now)
	return e
}

// errorBody finds the type and message of an error body.
func errorBody(body []byte) (typ, msg string) {
	var in struct {
		Error json.RawMessage `json:"error"`
		// Some OpenAI-compatible servers answer {"detail": "..."} or
		// {"message": "..."}.
		Detail  json.RawMessage `json:"detail"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &in) == nil {
		var e struct {
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(in.Error, &e) == nil && (e.Message != "" || e.Type != ""):
			typ = e.Type
			if c, ok := e.Code.(string); ok && c != "" {
				typ = c
			}
			return oneLine(typ), oneLine(e.Message)
		case json.Unmarshal(in.Error, &s) == nil && s != "":
			return "", oneLine(s)
		case json.Unmarshal(in.Detail, &s) == nil && s != "":
			return "", oneLine(s)
		case len(in.Detail) > 0 && string(in.Detail) != "null":
			return "", oneLine(string(in.Detail))
		case in.Message != "":
			return "", oneLine(in.Message)
		}
	}
	text := strings.TrimSpace(string(body))
	if !utf8.ValidString(text) {
		return "", ""
	}
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	return "", oneLine(text)
}

// retryHeaders reads when to try again: retry-after-ms (OpenAI),
// retry-after (seconds or an HTTP date), and the reset times of the limits
// that are used up — Anthropic's anthropic-ratelimit-*-reset (RFC 3339),
// OpenAI's x-ratelimit-reset-* (durations such as "6m0s").
func retryHeaders(h http.Header, now time.Time) (after time.Duration, reset time.Time) {
	for _, name := range []string{"retry-after-ms", "retry-after"} {
		if t, ok := retryafter.Parse(name, h.Get(name), now); ok && t.After(now) {
			after = t.Sub(now)
			break
		}
	}
	for _, limit := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		if v := h.Get("anthropic-ratelimit-" + limit + "-remaining"); v == "0" {
			if t, err := time.Parse(time.RFC3339, h.Get("anthropic-ratelimit-"+limit+"-reset")); err == nil && t.After(reset) {
				reset = t
			}
		}
		if v := h.Get("x-ratelimit-remaining-" + limit); v == "0" {
			if d, err := time.ParseDuration(h.Get("x-ratelimit-reset-" + limit)); err == nil && d > 0 && now.Add(d).After(reset) {
				reset = now.Add(d)
			}
		}
	}
	if after > 0 {
		// retry-after is the server's own word on this request.
		return after, time.Time{}
	}
	if d := reset.Sub(now); d > 0 {
		return d, reset
	}
	return 0, time.Time{}
}

// maxSummary bounds one-line messages.
const maxSummary = 300

// oneLine collapses whitespace to single spaces and cuts s to maxSummary
// bytes on a rune boundary.
func oneLine(s string) string { return textcut.OneLine(s, maxSummary) }

// send asks p for the model's next reply to the conversation and reads it,
// streamed or sent whole, giving its text to s. It returns an *apiError for
// what the API or the network did wrong, with the partial reply of a stream
// that broke off.
func send(ctx context.Context, o *Options, p provider, conv []message, s sink) (reply, error) {
	body, header, err := p.request(conv)
	if err != nil {
		return reply{}, fmt.Errorf("encode request: %w", err)
	}
	url := p.endpoint()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return reply{}, fmt.Errorf("request %s: %w", redacted(url), err)
	}
	req.Header = header
	req.Header.Set("content-type", "application/json")
	req.Header.Set("accept", "text/event-stream")
	resp, err := o.Client.Do(req)
	if err != nil {
		return reply{}, &apiError{Network: true, Message: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return reply{}, httpError(resp, b, o.Now())
	}
	// A server may answer with the whole message instead of a stream.
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("content-type")); mt == "application/json" {
		return p.whole(resp.Body, s)
	}
	return p.stream(resp.Body, s)
}
