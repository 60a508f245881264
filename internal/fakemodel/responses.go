package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The OpenAI Responses API, as Codex speaks it: POST /v1/responses with
// stream: true, answered with server-sent events.
//
// A step's tool call becomes a function_call item with JSON arguments, or,
// when its Input is exactly {"input": "<text>"}, a custom_tool_call item
// whose input is that text (Codex's freeform apply_patch tool). Shell calls
// built with Shell are put into the shape of the named Codex tool:
// exec_command takes {"cmd": "…"}, shell takes {"command": ["bash", "-lc", "…"]}.
func init() {
	dialects["POST /v1/responses"] = func() dialect { return &responses{} }
}

type responses struct {
	ids atomic.Int64 // makes the ids of responses and items unique
}

// responsesInputItem is one element of a request's input: a message, a
// tool call the model made earlier, or a tool's output.
type responsesInputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (d *responses) parse(r *http.Request, body []byte) (Request, error) {
	var in struct {
		Model  string          `json:"model"`
		Stream bool            `json:"stream"`
		Input  json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return Request{}, fmt.Errorf("decode responses request: %w", err)
	}
	req := Request{Model: in.Model, Stream: in.Stream}
	var s string
	if json.Unmarshal(in.Input, &s) == nil {
		req.FirstUser = s
		return req, nil
	}
	var items []responsesInputItem
	if err := json.Unmarshal(in.Input, &items); err != nil {
		return Request{}, fmt.Errorf("decode responses input: %w", err)
	}
	// Codex sends its environment context as a user message of its own
	// before the prompt, so the "first user message" is all the user text
	// there is: what a Match looks for is in one of them.
	var user []string
	for _, it := range items {
		switch it.Type {
		case "", "message":
			if it.Role == "user" {
				user = append(user, contentText(it.Content, "\n", "input_text", "output_text"))
			}
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output", "mcp_tool_call_output":
			req.ToolResults++
		}
	}
	if len(user) == 0 {
		return Request{}, errors.New("responses request without a user message")
	}
	req.FirstUser = strings.Join(user, "\n")
	return req, nil
}

func (d *responses) id(prefix string) string {
	return fmt.Sprintf("%s_fake%06d", prefix, d.ids.Add(1))
}

// item builds the output item of a step, complete, and what streams it:
// the name of its delta events, and the pieces.
func (d *responses) item(s Step) (item map[string]any, deltaEvent string, deltas []string) {
	if s.Tool == nil {
		return map[string]any{
			"id":     d.id("msg"),
			"type":   "message",
			"status": "completed",
			"role":   "assistant",
			"content": []any{map[string]any{
				"type": "output_text", "text": s.Text, "annotations": []any{},
			}},
		}, "response.output_text.delta", pieces(s.Text, 16)
	}
	if input, ok := responsesFreeform(s.Tool.Input); ok {
		return map[string]any{
			"id":      d.id("ctc"),
			"type":    "custom_tool_call",
			"status":  "completed",
			"call_id": d.id("call"),
			"name":    s.Tool.Name,
			"input":   input,
		}, "response.custom_tool_call_input.delta", pieces(input, 16)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a model writes `>` as it is
	if err := enc.Encode(responsesArguments(s.Tool.Name, s.Tool.Input)); err != nil {
		panic(err)
	}
	args := strings.TrimSuffix(buf.String(), "\n")
	return map[string]any{
		"id":        d.id("fc"),
		"type":      "function_call",
		"status":    "completed",
		"call_id":   d.id("call"),
		"name":      s.Tool.Name,
		"arguments": args,
	}, "response.function_call_arguments.delta", pieces(args, 16)
}

// responsesFreeform says whether a tool call is for a freeform tool, whose
// input is plain text rather than JSON arguments.
func responsesFreeform(in map[string]any) (string, bool) {
	if len(in) != 1 {
		return "", false
	}
	s, ok := in["input"].(string)
	return s, ok
}

// responsesArguments puts a call made with Shell ({"command": "…"}) into the
// argument shape of Codex's own shell tools; other calls pass as they are.
func responsesArguments(tool string, in map[string]any) map[string]any {
	cmd, ok := in["command"].(string)
	if !ok {
		return in
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = v
	}
	switch tool {
	case "exec_command":
		if _, has := in["cmd"]; !has {
			delete(out, "command")
			out["cmd"] = cmd
		}
	case "shell", "container.exec":
		out["command"] = []string{"bash", "-lc", cmd}
	}
	return out
}

func (d *responses) answer(w http.ResponseWriter, req Request, s Step) {
	respID := d.id("resp")
	item, deltaEvent, deltas := d.item(s)
	usage := map[string]any{
		"input_tokens":          Usage.Input,
		"input_tokens_details":  map[string]any{"cached_tokens": 0},
		"output_tokens":         Usage.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          Usage.Input + Usage.Output,
	}
	response := func(status string, output []any, usage any) map[string]any {
		return map[string]any{
			"id":         respID,
			"object":     "response",
			"created_at": time.Now().Unix(),
			"status":     status,
			"model":      req.Model,
			"output":     output,
			"usage":      usage,
			"error":      nil,
		}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(response("completed", []any{item}, usage))
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		sse(w, typ, fields)
	}
	itemID := item["id"].(string)
	event("response.created", map[string]any{"response": response("in_progress", []any{}, nil)})
	event("response.in_progress", map[string]any{"response": response("in_progress", []any{}, nil)})

	// The item as it starts: empty, in progress.
	started := make(map[string]any, len(item))
	for k, v := range item {
		started[k] = v
	}
	started["status"] = "in_progress"
	switch item["type"] {
	case "message":
		started["content"] = []any{}
	case "function_call":
		started["arguments"] = ""
	case "custom_tool_call":
		started["input"] = ""
	}
	event("response.output_item.added", map[string]any{"output_index": 0, "item": started})

	switch item["type"] {
	case "message":
		part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		event("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part})
		for _, p := range deltas {
			event(deltaEvent, map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": p, "logprobs": []any{}})
		}
		event("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": s.Text, "logprobs": []any{}})
		done := map[string]any{"type": "output_text", "text": s.Text, "annotations": []any{}}
		event("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": done})
	case "function_call":
		for _, p := range deltas {
			event(deltaEvent, map[string]any{"item_id": itemID, "output_index": 0, "delta": p})
		}
		event("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": 0, "name": item["name"], "arguments": item["arguments"]})
	case "custom_tool_call":
		for _, p := range deltas {
			event(deltaEvent, map[string]any{"item_id": itemID, "output_index": 0, "delta": p})
		}
		event("response.custom_tool_call_input.done", map[string]any{"item_id": itemID, "output_index": 0, "input": item["input"]})
	}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	event("response.completed", map[string]any{"response": response("completed", []any{item}, usage)})
}

// fail writes an error the way the OpenAI API does: an {"error": …} body,
// and for a 429 the rate limit headers a client reads its wait from
// (unless the fault sets its own).
func (d *responses) fail(w http.ResponseWriter, f Fault) {
	typ, code, msg := "server_error", any(nil), "The server had an error while processing your request. Sorry about that!"
	switch {
	case f.Status == http.StatusTooManyRequests:
		// The wait is said in the headers (the fault's retry-after, if it
		// sets one) and in the message, as the API does.
		h := w.Header()
		responsesSetDefault(h, "retry-after", "1")
		secs, err := strconv.Atoi(h.Get("retry-after"))
		if err != nil || secs < 0 {
			secs = 1
		}
		responsesSetDefault(h, "retry-after-ms", strconv.Itoa(secs*1000))
		responsesSetDefault(h, "x-ratelimit-limit-requests", "3")
		responsesSetDefault(h, "x-ratelimit-remaining-requests", "0")
		responsesSetDefault(h, "x-ratelimit-reset-requests", strconv.Itoa(secs)+"s")
		responsesSetDefault(h, "x-ratelimit-reset-tokens", strconv.Itoa(secs)+"s")
		typ, code = "requests", "rate_limit_exceeded"
		msg = fmt.Sprintf("Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in %ds.", secs)
	case f.Status == http.StatusUnauthorized:
		typ, code = "invalid_request_error", "invalid_api_key"
		msg = "Incorrect API key provided: sk-fake. You can find your API key at https://platform.openai.com/account/api-keys."
	case f.Status == http.StatusNotFound:
		typ, code = "invalid_request_error", "model_not_found"
		msg = "The model does not exist or you do not have access to it."
	case f.Status >= 400 && f.Status < 500:
		typ = "invalid_request_error"
		msg = "Invalid request (status " + strconv.Itoa(f.Status) + ")."
	case f.Status == http.StatusServiceUnavailable:
		msg = "The engine is currently overloaded, please try again later."
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code,
	}})
}

func responsesSetDefault(h http.Header, key, value string) {
	if h.Get(key) == "" {
		h.Set(key, value)
	}
}
