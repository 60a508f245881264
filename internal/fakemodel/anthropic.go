package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Anthropic Messages API, as Claude Code calls it: POST /v1/messages,
// streamed as server-sent events (message_start, content_block_start,
// content_block_delta, content_block_stop, message_delta, message_stop) or
// answered as one JSON message, and POST /v1/messages/count_tokens.
func init() {
	dialects["POST /v1/messages"] = func() dialect { return anthropic{} }
	dialects["POST /v1/messages/count_tokens"] = func() dialect { return anthropicCount{} }
}

type anthropic struct{}

// anthropicMessage is one message of a request's history.
type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is one content block of a request message.
type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (anthropic) parse(r *http.Request, body []byte) (Request, error) {
	var in struct {
		Model    string             `json:"model"`
		Stream   bool               `json:"stream"`
		Messages []anthropicMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return Request{}, fmt.Errorf("anthropic request: %w", err)
	}
	req := Request{Model: in.Model, Stream: in.Stream}
	first := true
	for _, m := range in.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			if first {
				req.FirstUser = s
			}
			first = false
			continue
		}
		var blocks []anthropicBlock
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return Request{}, fmt.Errorf("anthropic request: content of a user message: %w", err)
		}
		var text []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				text = append(text, b.Text)
			case "tool_result":
				req.ToolResults++
			}
		}
		if first {
			req.FirstUser = strings.Join(text, "\n")
		}
		first = false
	}
	return req, nil
}

// anthropicModel is the model named in answers: the request's own, or a
// default.
func anthropicModel(req Request) string {
	if req.Model != "" {
		return req.Model
	}
	return "claude-fake"
}

func (anthropic) answer(w http.ResponseWriter, req Request, s Step) {
	id := fmt.Sprintf("msg_fake_%d", time.Now().UnixNano())
	// The content blocks: the text first, then the tool call.
	var content []map[string]any
	if s.Text != "" || s.Tool == nil {
		content = append(content, map[string]any{"type": "text", "text": s.Text})
	}
	stop := "end_turn"
	if s.Tool != nil {
		input := s.Tool.Input
		if input == nil {
			input = map[string]any{}
		}
		content = append(content, map[string]any{
			"type":  "tool_use",
			"id":    fmt.Sprintf("toolu_fake_%d", req.ToolResults),
			"name":  s.Tool.Name,
			"input": input,
		})
		stop = "tool_use"
	}
	w.Header().Set("request-id", "req_"+id)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": id, "type": "message", "role": "assistant",
			"model": anthropicModel(req), "content": content,
			"stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": Usage.Input, "output_tokens": Usage.Output},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": id, "type": "message", "role": "assistant",
			"model": anthropicModel(req), "content": []any{},
			"stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens": Usage.Input, "output_tokens": 1,
				"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
			},
		},
	})
	sse(w, "ping", map[string]any{"type": "ping"})
	for i, b := range content {
		switch b["type"] {
		case "text":
			sse(w, "content_block_start", map[string]any{
				"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""},
			})
			// The text in two deltas, as a real stream cuts it.
			text := b["text"].(string)
			for _, part := range pieces(text, halves(text)) {
				sse(w, "content_block_delta", map[string]any{
					"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": part},
				})
			}
		case "tool_use":
			sse(w, "content_block_start", map[string]any{
				"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}},
			})
			js, err := json.Marshal(b["input"])
			if err != nil {
				panic(err)
			}
			// The input as partial JSON in two pieces: the client must
			// join them before parsing.
			half := len(js) / 2
			for _, part := range []string{"", string(js[:half]), string(js[half:])} {
				sse(w, "content_block_delta", map[string]any{
					"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part},
				})
			}
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": Usage.Output},
	})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// anthropicErrorTypes are the API's error types by HTTP status.
var anthropicErrorTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	403: "permission_error",
	404: "not_found_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	529: "overloaded_error",
}

func (anthropic) fail(w http.ResponseWriter, f Fault) {
	typ, ok := anthropicErrorTypes[f.Status]
	if !ok {
		typ = "api_error"
	}
	msg := http.StatusText(f.Status)
	switch f.Status {
	case 529:
		msg = "Overloaded"
	case http.StatusTooManyRequests:
		msg = "This request would exceed your organization's rate limit. Please try again later."
		// A rate limit says when it lifts: the headers the API sends,
		// unless the fault set its own.
		if w.Header().Get("retry-after") == "" {
			w.Header().Set("retry-after", "1")
		}
		if w.Header().Get("anthropic-ratelimit-requests-reset") == "" {
			secs, _ := strconv.Atoi(w.Header().Get("retry-after"))
			reset := time.Now().Add(time.Duration(secs) * time.Second).UTC().Format(time.RFC3339)
			w.Header().Set("anthropic-ratelimit-requests-limit", "50")
			w.Header().Set("anthropic-ratelimit-requests-remaining", "0")
			w.Header().Set("anthropic-ratelimit-requests-reset", reset)
		}
	}
	if msg == "" {
		msg = "error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", fmt.Sprintf("req_fake_%d", time.Now().UnixNano()))
	w.WriteHeader(f.Status)
	json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	})
}

// anthropicCount answers token counting. It belongs to no conversation,
// so it never consumes a fault: its requests claim no first user message.
type anthropicCount struct{}

func (anthropicCount) parse(r *http.Request, body []byte) (Request, error) {
	var in struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return Request{}, fmt.Errorf("anthropic count_tokens request: %w", err)
	}
	return Request{Model: in.Model}, nil
}

func (anthropicCount) answer(w http.ResponseWriter, req Request, s Step) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"input_tokens":`+strconv.Itoa(Usage.Input)+"}\n")
}

func (anthropicCount) fail(w http.ResponseWriter, f Fault) { anthropic{}.fail(w, f) }
