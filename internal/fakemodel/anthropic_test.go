package fakemodel

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"
)

// postMessages sends a Messages API request the way Claude Code does: the
// prompt as the first user message (after a system reminder), then the
// history of tool calls and their results.
func postMessages(t *testing.T, s *Server, path string, stream bool, prompt string, toolResults int) *http.Response {
	t.Helper()
	messages := []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<system-reminder>context</system-reminder>"},
			map[string]any{"type": "text", "text": prompt, "cache_control": map[string]any{"type": "ephemeral"}},
		}},
	}
	for i := range toolResults {
		id := "toolu_" + string(rune('a'+i))
		messages = append(messages,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "true"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"}}},
		)
	}
	body := mustJSON(t, map[string]any{"model": "claude-test", "max_tokens": 1000, "stream": stream, "messages": messages, "system": []any{}, "tools": []any{}})
	return post(t, s, path, body, map[string]string{"x-api-key": "sk-ant-fake", "anthropic-version": "2023-06-01"})
}

// anthropicMessageOf puts a streamed message together the way a client
// does: text deltas joined, tool input from its partial JSON.
func anthropicMessageOf(t *testing.T, evs []sseEvent) (blocks []map[string]any, stop string, usage map[string]float64) {
	t.Helper()
	usage = map[string]float64{}
	partial := map[int]string{}
	for _, ev := range evs {
		switch ev.name {
		case "message_start":
			u := ev.data["message"].(map[string]any)["usage"].(map[string]any)
			usage["input"] = u["input_tokens"].(float64)
		case "content_block_start":
			blocks = append(blocks, ev.data["content_block"].(map[string]any))
			if int(ev.data["index"].(float64)) != len(blocks)-1 {
				t.Errorf("content_block_start index %v, want %d", ev.data["index"], len(blocks)-1)
			}
		case "content_block_delta":
			i := int(ev.data["index"].(float64))
			d := ev.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				blocks[i]["text"] = blocks[i]["text"].(string) + d["text"].(string)
			case "input_json_delta":
				partial[i] += d["partial_json"].(string)
			default:
				t.Errorf("unknown delta %v", d)
			}
		case "content_block_stop":
			i := int(ev.data["index"].(float64))
			if js, ok := partial[i]; ok {
				var input map[string]any
				if err := json.Unmarshal([]byte(js), &input); err != nil {
					t.Fatalf("tool input %q: %v", js, err)
				}
				blocks[i]["input"] = input
			}
		case "message_delta":
			stop = ev.data["delta"].(map[string]any)["stop_reason"].(string)
			usage["output"] = ev.data["usage"].(map[string]any)["output_tokens"].(float64)
		}
	}
	return blocks, stop, usage
}

func TestAnthropicStream(t *testing.T) {
	s := startServer(t, Conversation{
		Match: "US-001",
		Steps: []Step{
			{Text: "Writing it.", Tool: Shell("Bash", "echo hi > hi.txt")},
			{Tool: &ToolCall{Name: "Write", Input: map[string]any{"file_path": "/w/a.txt", "content": "a\n"}}},
			{Text: "Done. é\n<ralph>done</ralph>"},
		},
	})

	resp := postMessages(t, s, "/v1/messages", true, "Story US-001", 0)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	evs := readEvents(t, resp.Body)
	want := []string{"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if got := eventNames(evs); !slices.Equal(got, want) {
		t.Errorf("events %q\nwant %q", got, want)
	}
	blocks, stop, usage := anthropicMessageOf(t, evs)
	if len(blocks) != 2 || blocks[0]["text"] != "Writing it." || blocks[1]["name"] != "Bash" ||
		blocks[1]["input"].(map[string]any)["command"] != "echo hi > hi.txt" || blocks[1]["id"] == "" {
		t.Errorf("step 0: blocks %v", blocks)
	}
	if stop != "tool_use" {
		t.Errorf("step 0: stop_reason %q, want tool_use", stop)
	}
	if usage["input"] != float64(Usage.Input) || usage["output"] != float64(Usage.Output) {
		t.Errorf("usage %v, want %d in, %d out", usage, Usage.Input, Usage.Output)
	}

	// The step is the number of tool results in the history.
	blocks, stop, _ = anthropicMessageOf(t, readEvents(t, postMessages(t, s, "/v1/messages", true, "Story US-001", 1).Body))
	if len(blocks) != 1 || blocks[0]["name"] != "Write" || blocks[0]["input"].(map[string]any)["file_path"] != "/w/a.txt" || stop != "tool_use" {
		t.Errorf("step 1: blocks %v, stop %q", blocks, stop)
	}
	blocks, stop, _ = anthropicMessageOf(t, readEvents(t, postMessages(t, s, "/v1/messages", true, "Story US-001", 2).Body))
	if len(blocks) != 1 || blocks[0]["text"] != "Done. é\n<ralph>done</ralph>" || stop != "end_turn" {
		t.Errorf("step 2: blocks %v, stop %q", blocks, stop)
	}
}

func TestAnthropicNotStreamed(t *testing.T) {
	s := startServer(t, Conversation{Match: "US-001", Steps: []Step{{Tool: Shell("Bash", "ls")}}})
	resp := postMessages(t, s, "/v1/messages", false, "Story US-001", 0)
	var msg struct {
		Type       string           `json:"type"`
		Role       string           `json:"role"`
		Model      string           `json:"model"`
		Content    []map[string]any `json:"content"`
		StopReason string           `json:"stop_reason"`
		Usage      map[string]int   `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || msg.Role != "assistant" || msg.Model != "claude-test" || msg.StopReason != "tool_use" ||
		len(msg.Content) != 1 || msg.Content[0]["type"] != "tool_use" || msg.Usage["input_tokens"] != Usage.Input {
		t.Errorf("message %+v", msg)
	}
}

func TestAnthropicFaults(t *testing.T) {
	s := startServer(t, Conversation{
		Match: "US-001",
		Steps: []Step{{Text: "ok"}},
		Faults: map[int][]Fault{0: {
			{Status: 429},
			{Status: 429, Headers: map[string]string{"retry-after": "7"}},
			{Status: 529},
			{Status: 500, Body: `{"type":"error","error":{"type":"api_error","message":"own body"}}`},
		}},
	})
	// Token counting answers without taking a fault.
	resp := postMessages(t, s, "/v1/messages/count_tokens", false, "Story US-001", 0)
	var count map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&count); err != nil || resp.StatusCode != 200 || count["input_tokens"] != Usage.Input {
		t.Errorf("count_tokens: %d %v (%v)", resp.StatusCode, count, err)
	}

	type errorBody struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	tests := []struct {
		status     int
		errType    string
		retryAfter string
		message    string
	}{
		{429, "rate_limit_error", "1", ""},
		{429, "rate_limit_error", "7", ""},
		{529, "overloaded_error", "", "Overloaded"},
		{500, "api_error", "", "own body"},
	}
	for i, tt := range tests {
		resp := postMessages(t, s, "/v1/messages", true, "Story US-001", 0)
		var body errorBody
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("fault %d: %v", i, err)
		}
		if resp.StatusCode != tt.status || body.Type != "error" || body.Error.Type != tt.errType || body.Error.Message == "" {
			t.Errorf("fault %d: %d %+v, want %d %s", i, resp.StatusCode, body, tt.status, tt.errType)
		}
		if tt.message != "" && body.Error.Message != tt.message {
			t.Errorf("fault %d: message %q, want %q", i, body.Error.Message, tt.message)
		}
		if got := resp.Header.Get("retry-after"); got != tt.retryAfter {
			t.Errorf("fault %d: retry-after %q, want %q", i, got, tt.retryAfter)
		}
		if tt.status == 429 {
			reset, err := time.Parse(time.RFC3339, resp.Header.Get("anthropic-ratelimit-requests-reset"))
			if err != nil || reset.Before(time.Now().Add(-time.Minute)) {
				t.Errorf("fault %d: anthropic-ratelimit-requests-reset %q (%v)", i, resp.Header.Get("anthropic-ratelimit-requests-reset"), err)
			}
		}
	}
	// The faults are spent: the answer itself.
	blocks, _, _ := anthropicMessageOf(t, readEvents(t, postMessages(t, s, "/v1/messages", true, "Story US-001", 0).Body))
	if len(blocks) != 1 || blocks[0]["text"] != "ok" {
		t.Errorf("after the faults: blocks %v", blocks)
	}
}

func TestAnthropicParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Request
		bad  bool
	}{
		{
			name: "string content",
			body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"hello US-9"}]}`,
			want: Request{FirstUser: "hello US-9", Stream: true, Model: "m"},
		},
		{
			name: "blocks, history and later user text",
			body: `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]},` +
				`{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"Bash","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":[{"type":"text","text":"x"}]},{"type":"text","text":"later"}]},` +
				`{"role":"assistant","content":"y"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"2","content":"z"}]}]}`,
			want: Request{FirstUser: "a\nb", ToolResults: 2},
		},
		{name: "not JSON", body: `{`, bad: true},
		{name: "odd content", body: `{"messages":[{"role":"user","content":7}]}`, bad: true},
	}
	for _, tt := range tests {
		got, err := anthropic{}.parse(nil, []byte(tt.body))
		if (err != nil) != tt.bad {
			t.Errorf("%s: error %v, want error %v", tt.name, err, tt.bad)
			continue
		}
		if !tt.bad && got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
