package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// postResponses sends a Responses API request the way Codex does: the
// environment context and the prompt as two user messages, then the
// history of tool calls and their outputs.
func postResponses(t *testing.T, s *Server, stream bool, prompt string, toolOutputs int) *http.Response {
	t.Helper()
	input := []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "You are Codex."}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}},
	}
	for i := range toolOutputs {
		call := "call_" + string(rune('a'+i))
		input = append(input,
			map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"true"}`, "call_id": call},
			map[string]any{"type": "function_call_output", "call_id": call, "output": "ok"},
		)
	}
	return post(t, s, "/v1/responses", mustJSON(t, map[string]any{"model": "gpt-5.5", "stream": stream, "input": input, "tools": []any{}}), nil)
}

func TestResponsesStream(t *testing.T) {
	s := startServer(t, Conversation{
		Match: "US-007",
		Steps: []Step{
			{Tool: Shell("exec_command", "echo hi > hi.txt")},
			{Tool: &ToolCall{Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"}}},
			{Tool: Shell("shell", "ls")},
			{Text: "All done, with a long enough text to need several deltas.\n<ralph>done</ralph>"},
		},
	})
	tests := []struct {
		step      int
		itemType  string
		deltaName string
		field     string // the item field the deltas add up to
		want      string
	}{
		{0, "function_call", "response.function_call_arguments.delta", "arguments", `{"cmd":"echo hi > hi.txt"}`},
		{1, "custom_tool_call", "response.custom_tool_call_input.delta", "input", "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"},
		{2, "function_call", "response.function_call_arguments.delta", "arguments", `{"command":["bash","-lc","ls"]}`},
		{3, "message", "response.output_text.delta", "", "All done, with a long enough text to need several deltas.\n<ralph>done</ralph>"},
	}
	for _, tt := range tests {
		resp := postResponses(t, s, true, "Work on story US-007.", tt.step)
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
			t.Fatalf("step %d: status %d, Content-Type %q", tt.step, resp.StatusCode, ct)
		}
		evs := readEvents(t, resp.Body)
		if len(evs) < 4 || evs[0].name != "response.created" || evs[len(evs)-1].name != "response.completed" {
			t.Fatalf("step %d: events %v, want response.created … response.completed", tt.step, eventNames(evs))
		}
		var deltas strings.Builder
		var nDeltas int
		var done map[string]any
		for i, ev := range evs {
			if seq, _ := ev.data["sequence_number"].(float64); int(seq) != i {
				t.Errorf("step %d: event %d has sequence_number %v", tt.step, i, ev.data["sequence_number"])
			}
			switch ev.name {
			case tt.deltaName:
				d, _ := ev.data["delta"].(string)
				deltas.WriteString(d)
				nDeltas++
			case "response.output_item.done":
				done, _ = ev.data["item"].(map[string]any)
			}
		}
		if deltas.String() != tt.want || nDeltas < 2 {
			t.Errorf("step %d: %d deltas add up to %q, want several adding up to %q", tt.step, nDeltas, deltas.String(), tt.want)
		}
		if done == nil || done["type"] != tt.itemType {
			t.Fatalf("step %d: output_item.done item %v, want a %s", tt.step, done, tt.itemType)
		}
		if tt.field != "" && done[tt.field] != tt.want {
			t.Errorf("step %d: item %s = %q, want %q", tt.step, tt.field, done[tt.field], tt.want)
		}
		if tt.itemType != "message" && (done["call_id"] == "" || done["call_id"] == nil) {
			t.Errorf("step %d: tool call item without a call_id: %v", tt.step, done)
		}
		completed := evs[len(evs)-1].data["response"].(map[string]any)
		usage, _ := completed["usage"].(map[string]any)
		if completed["status"] != "completed" || usage["input_tokens"] != float64(Usage.Input) || usage["output_tokens"] != float64(Usage.Output) {
			t.Errorf("step %d: response.completed = %v, want status completed and the fixed usage", tt.step, completed)
		}
	}
}

func TestResponsesNotStreamed(t *testing.T) {
	s := startServer(t, Conversation{Match: "US-008", Steps: []Step{{Text: "hello"}}})
	resp := postResponses(t, s, false, "US-008", 0)
	var out struct {
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			Input int `json:"input_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Status != "completed" || len(out.Output) != 1 || out.Output[0].Type != "message" || len(out.Output[0].Content) != 1 || out.Output[0].Content[0].Text != "hello" || out.Usage.Input != Usage.Input {
		t.Errorf("response = %+v, want the text step", out)
	}
}

func TestResponsesFaults(t *testing.T) {
	s := startServer(t, Conversation{
		Match: "US-009",
		Steps: []Step{{Text: "finally"}},
		Faults: map[int][]Fault{0: {
			{Status: http.StatusTooManyRequests},
			{Status: http.StatusTooManyRequests, Headers: map[string]string{"retry-after": "7"}},
			{Status: http.StatusInternalServerError},
		}},
	})
	type apiError struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	for _, want := range []struct {
		status            int
		retryAfter, reset string
		code              string
	}{
		{429, "1", "1s", "rate_limit_exceeded"},
		{429, "7", "7s", "rate_limit_exceeded"},
		{500, "", "", ""},
	} {
		resp := postResponses(t, s, true, "US-009", 0)
		var e apiError
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		code := ""
		if e.Error.Code != nil {
			code = *e.Error.Code
		}
		if resp.StatusCode != want.status || resp.Header.Get("retry-after") != want.retryAfter ||
			resp.Header.Get("x-ratelimit-reset-requests") != want.reset || code != want.code || e.Error.Message == "" {
			t.Errorf("got %d (retry-after %q, reset %q) %+v; want %d (retry-after %q, reset %q) code %q",
				resp.StatusCode, resp.Header.Get("retry-after"), resp.Header.Get("x-ratelimit-reset-requests"), e.Error,
				want.status, want.retryAfter, want.reset, want.code)
		}
		if want.status == 429 && !strings.Contains(e.Error.Message, "try again in "+want.retryAfter+"s") {
			t.Errorf("429 message %q does not say when to try again", e.Error.Message)
		}
	}
	evs := readEvents(t, postResponses(t, s, true, "US-009", 0).Body)
	if len(evs) == 0 || evs[len(evs)-1].name != "response.completed" {
		t.Errorf("after the faults: events %v, want the answer", eventNames(evs))
	}
	if log := strings.Join(s.Log(), "\n"); strings.Count(log, "fault 429") != 2 || strings.Count(log, "fault 500") != 1 {
		t.Errorf("server log:\n%s\nwant two 429s and a 500", log)
	}
}

func TestResponsesParse(t *testing.T) {
	d := &responses{}
	tests := []struct {
		name string
		body string
		want Request
		err  bool
	}{
		{
			name: "string input",
			body: `{"model":"m","input":"US-1 please"}`,
			want: Request{FirstUser: "US-1 please", Model: "m"},
		},
		{
			name: "tool outputs counted, user messages joined",
			body: `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":"ctx"},{"role":"user","content":[{"type":"input_text","text":"US-2"}]},{"type":"function_call","call_id":"a"},{"type":"function_call_output","call_id":"a","output":"x"},{"type":"custom_tool_call_output","call_id":"b","output":"y"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"US-3"}]}]}`,
			want: Request{FirstUser: "ctx\nUS-2", ToolResults: 2, Stream: true, Model: "m"},
		},
		{name: "no user message", body: `{"input":[]}`, err: true},
		{name: "not JSON", body: `{`, err: true},
		{name: "input of another type", body: `{"input":7}`, err: true},
	}
	for _, tt := range tests {
		got, err := d.parse(nil, []byte(tt.body))
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("%s: parse = %+v, %v; want %+v (error: %v)", tt.name, got, err, tt.want, tt.err)
		}
	}
}

func TestResponsesArguments(t *testing.T) {
	in := map[string]any{"command": "ls", "workdir": "/w"}
	got := responsesArguments("exec_command", in)
	if got["cmd"] != "ls" || got["workdir"] != "/w" || got["command"] != nil {
		t.Errorf("exec_command arguments = %v", got)
	}
	if in["command"] != "ls" {
		t.Errorf("responsesArguments changed its input: %v", in)
	}
	if got := responsesArguments("exec_command", map[string]any{"cmd": "a", "command": "b"}); got["cmd"] != "a" {
		t.Errorf("an explicit cmd was replaced: %v", got)
	}
	if got := responsesArguments("other", in); got["command"] != "ls" {
		t.Errorf("another tool's arguments changed: %v", got)
	}
}
