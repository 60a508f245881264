package fakemodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// chat is the OpenAI Chat Completions API (POST /v1/chat/completions), as
// opencode speaks it through the AI SDK's OpenAI-compatible provider: a
// request holds the whole conversation in messages, tool results as
// messages of role "tool"; a streamed answer is a series of
// chat.completion.chunk objects as server-sent data lines, ended by
// `data: [DONE]`.
type chat struct{}

func init() {
	dialects["POST /v1/chat/completions"] = func() dialect { return chat{} }
}

type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (chat) parse(_ *http.Request, body []byte) (Request, error) {
	var cr chatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		return Request{}, fmt.Errorf("chat completions request: %w", err)
	}
	if len(cr.Messages) == 0 {
		return Request{}, errors.New("chat completions request: no messages")
	}
	req := Request{Stream: cr.Stream, Model: cr.Model}
	first := true
	for _, m := range cr.Messages {
		switch m.Role {
		case "user":
			if first {
				req.FirstUser = contentText(m.Content, "", "text")
				first = false
			}
		case "tool":
			req.ToolResults++
		}
	}
	return req, nil
}

// contentText returns the text of a message's content: a string, or the
// texts of those of its parts whose type is one of types, joined by sep.
func contentText(raw json.RawMessage, sep string, types ...string) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		if p.Text != "" && slices.Contains(types, p.Type) {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, sep)
}

// chatUsage is the usage object of an answer.
func chatUsage() map[string]any {
	return map[string]any{
		"prompt_tokens":     Usage.Input,
		"completion_tokens": Usage.Output,
		"total_tokens":      Usage.Input + Usage.Output,
	}
}

// chatToolCall is a step's tool call in the API's shape, with its
// arguments as one JSON string.
func chatToolCall(req Request, t *ToolCall) (id, args string) {
	b, err := json.Marshal(t.Input)
	if err != nil {
		panic(err)
	}
	if t.Input == nil {
		b = []byte("{}")
	}
	return fmt.Sprintf("call_fake_%d", req.ToolResults), string(b)
}

func (chat) answer(w http.ResponseWriter, req Request, s Step) {
	id := fmt.Sprintf("chatcmpl-fake-%d", req.ToolResults)
	model := req.Model
	if model == "" {
		model = "fake-model"
	}
	created := time.Now().Unix()
	finish := "stop"
	if s.Tool != nil {
		finish = "tool_calls"
	}

	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": nil}
		if s.Text != "" || s.Tool == nil {
			msg["content"] = s.Text
		}
		if s.Tool != nil {
			callID, args := chatToolCall(req, s.Tool)
			msg["tool_calls"] = []any{map[string]any{
				"id":       callID,
				"type":     "function",
				"function": map[string]any{"name": s.Tool.Name, "arguments": args},
			}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id":      id,
			"object":  "chat.completion",
			"created": created,
			"model":   model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   chatUsage(),
		})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	chunk := func(choices []any, usage map[string]any) {
		c := map[string]any{
			"id":      id,
			"object":  "chat.completion.chunk",
			"created": created,
			"model":   model,
			"choices": choices,
		}
		if usage != nil {
			c["usage"] = usage
		}
		sse(w, "", c)
	}
	delta := func(d map[string]any) {
		chunk([]any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}, nil)
	}

	delta(map[string]any{"role": "assistant", "content": ""})
	for _, piece := range pieces(s.Text, thirds(s.Text)) {
		delta(map[string]any{"content": piece})
	}
	if s.Tool != nil {
		callID, args := chatToolCall(req, s.Tool)
		// The id, type and name come first with no arguments; the
		// arguments follow in fragments, as the API streams them.
		delta(map[string]any{"tool_calls": []any{map[string]any{
			"index":    0,
			"id":       callID,
			"type":     "function",
			"function": map[string]any{"name": s.Tool.Name, "arguments": ""},
		}}})
		for _, piece := range pieces(args, halves(args)) {
			delta(map[string]any{"tool_calls": []any{map[string]any{
				"index":    0,
				"function": map[string]any{"arguments": piece},
			}}})
		}
	}
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	// The usage chunk, with no choices, as the API sends it when the
	// request sets stream_options.include_usage (opencode always does).
	chunk([]any{}, chatUsage())
	w.Write([]byte("data: [DONE]\n\n"))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// pieces cuts s into pieces of about size bytes, each ending on the first
// rune boundary at or after size, so that text and arguments arrive in
// several deltas, as a model streams them; "" gives none.
func pieces(s string, size int) []string {
	size = max(size, 1)
	var out []string
	for len(s) > size {
		cut := size
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// thirds and halves are the sizes that cut s into three or two pieces.
func thirds(s string) int { return (len(s) + 2) / 3 }
func halves(s string) int { return (len(s) + 1) / 2 }

// fail writes an error in the API's shape:
// {"error":{"message","type","param","code"}}.
func (chat) fail(w http.ResponseWriter, f Fault) {
	msg, typ, code := http.StatusText(f.Status), "api_error", ""
	switch {
	case f.Status == http.StatusTooManyRequests:
		msg = "Rate limit reached for requests. Please try again later."
		if ra := f.Headers["retry-after"]; ra != "" {
			msg = fmt.Sprintf("Rate limit reached for requests. Please try again in %ss.", ra)
		}
		typ, code = "rate_limit_exceeded", "rate_limit_exceeded"
	case f.Status == http.StatusUnauthorized:
		msg = "Incorrect API key provided."
		typ, code = "invalid_request_error", "invalid_api_key"
	case f.Status == http.StatusServiceUnavailable:
		msg = "The server is overloaded or not ready yet."
		typ = "server_error"
	case f.Status >= 500:
		msg = "The server had an error while processing your request. Sorry about that!"
		typ = "server_error"
	}
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}
