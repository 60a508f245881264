package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// chatPost sends a Chat Completions request to s and returns the response.
func chatPost(t *testing.T, s *Server, body string) *http.Response {
	t.Helper()
	return post(t, s, "/v1/chat/completions", body, nil)
}

// chatStream is what a streamed answer said, put back together.
type chatStream struct {
	text    string
	callID  string
	name    string
	args    string
	finish  string
	usage   map[string]int
	done    bool
	objects []string
}

func readChatStream(t *testing.T, r io.Reader) chatStream {
	t.Helper()
	var cs chatStream
	for _, data := range readData(t, r) {
		if cs.done {
			t.Fatalf("data after [DONE]: %q", data)
		}
		if data == "[DONE]" {
			cs.done = true
			continue
		}
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]int `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		cs.objects = append(cs.objects, c.Object)
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Errorf("usage chunk has choices: %s", data)
			}
			cs.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				cs.text += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index != 0 {
					t.Errorf("tool call index %d, want 0", tc.Index)
				}
				if tc.ID != "" {
					if cs.callID != "" {
						t.Errorf("tool call id sent twice")
					}
					cs.callID = tc.ID
					if tc.Type != "function" {
						t.Errorf("tool call type %q, want function", tc.Type)
					}
				}
				cs.name += tc.Function.Name
				cs.args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				cs.finish = *ch.FinishReason
			}
		}
	}
	return cs
}

func TestChatStream(t *testing.T) {
	s := startServer(t, Conversation{
		Match: "US-007",
		Steps: []Step{
			{Tool: Shell("bash", `echo "héllo" > a.txt`)},
			{Text: "Wrote it.", Tool: &ToolCall{Name: "write", Input: map[string]any{"filePath": "/w/b.txt", "content": "b\n"}}},
			{Text: "All done, ünïcode.\n<ralph>done</ralph>"},
		},
	})

	const system = `{"role":"system","content":"You are opencode."}`
	const user = `{"role":"user","content":[{"type":"text","text":"Work on US-007 now."}]}`
	const call = `{"role":"assistant","content":null,"tool_calls":[{"id":"x","type":"function","function":{"name":"bash","arguments":"{}"}}]}`
	const result = `{"role":"tool","tool_call_id":"x","content":"ok"}`
	req := func(msgs ...string) string {
		return `{"model":"fake-model","stream":true,"stream_options":{"include_usage":true},"messages":[` + strings.Join(msgs, ",") + `]}`
	}

	resp := chatPost(t, s, req(system, user))
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	cs := readChatStream(t, resp.Body)
	if cs.name != "bash" || cs.finish != "tool_calls" || cs.callID == "" || !cs.done {
		t.Errorf("step 0: %+v, want a bash call, finish tool_calls, [DONE]", cs)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(cs.args), &args); err != nil || args["command"] != `echo "héllo" > a.txt` {
		t.Errorf("step 0 arguments %q (%v), want the command", cs.args, err)
	}
	if cs.usage["prompt_tokens"] != Usage.Input || cs.usage["completion_tokens"] != Usage.Output || cs.usage["total_tokens"] != Usage.Input+Usage.Output {
		t.Errorf("usage %v, want %d prompt and %d completion tokens", cs.usage, Usage.Input, Usage.Output)
	}
	for _, o := range cs.objects {
		if o != "chat.completion.chunk" {
			t.Errorf("object %q, want chat.completion.chunk", o)
		}
	}

	cs = readChatStream(t, chatPost(t, s, req(system, user, call, result)).Body)
	if cs.text != "Wrote it." || cs.name != "write" || cs.finish != "tool_calls" {
		t.Errorf("step 1: %+v, want text then a write call", cs)
	}
	if err := json.Unmarshal([]byte(cs.args), &args); err != nil || args["filePath"] != "/w/b.txt" || args["content"] != "b\n" {
		t.Errorf("step 1 arguments %q (%v)", cs.args, err)
	}

	cs = readChatStream(t, chatPost(t, s, req(system, user, call, result, call, result)).Body)
	if cs.text != "All done, ünïcode.\n<ralph>done</ralph>" || cs.name != "" || cs.finish != "stop" || !cs.done {
		t.Errorf("step 2: %+v, want the final text and finish stop", cs)
	}

	// A title request does not carry the match: a harmless answer.
	cs = readChatStream(t, chatPost(t, s, req(system, `{"role":"user","content":"Generate a title for this conversation:\n"}`, user)).Body)
	if cs.finish != "stop" || cs.name != "" {
		t.Errorf("unmatched request: %+v, want a text answer", cs)
	}
	log := strings.Join(s.Log(), "\n")
	for _, want := range []string{`"US-007" step 0`, `"US-007" step 1`, `"US-007" step 2`, "no conversation matches"} {
		if !strings.Contains(log, want) {
			t.Errorf("server log lacks %q:\n%s", want, log)
		}
	}
}

func TestChatNotStreamed(t *testing.T) {
	s := startServer(t, Conversation{Match: "US-1", Steps: []Step{{Tool: Shell("bash", "ls")}, {Text: "fine"}}})
	var out struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	resp := chatPost(t, s, `{"model":"m","messages":[{"role":"user","content":"US-1"}]}`)
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Object != "chat.completion" || len(out.Choices) != 1 || out.Choices[0].FinishReason != "tool_calls" ||
		len(out.Choices[0].Message.ToolCalls) != 1 || out.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"command":"ls"}` ||
		out.Usage["prompt_tokens"] != Usage.Input {
		t.Errorf("answer %+v, want one bash call with usage", out)
	}

	out.Choices = nil
	resp = chatPost(t, s, `{"model":"m","messages":[{"role":"user","content":"US-1"},{"role":"tool","content":"x"}]}`)
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Choices) != 1 || out.Choices[0].Message.Content == nil || *out.Choices[0].Message.Content != "fine" || out.Choices[0].FinishReason != "stop" {
		t.Errorf("answer %+v, want the text", out)
	}
}

func TestChatFaults(t *testing.T) {
	s := startServer(t, Conversation{
		Match: "US-2",
		Steps: []Step{{Text: "ok"}},
		Faults: map[int][]Fault{0: {
			{Status: 429, Headers: map[string]string{"retry-after": "2"}},
			{Status: 500},
			{Status: 429, Body: `{"error":{"message":"custom"}}`},
		}},
	})
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"US-2"}]}`

	resp := chatPost(t, s, body)
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if resp.StatusCode != 429 || resp.Header.Get("retry-after") != "2" || json.Unmarshal(b, &e) != nil ||
		e.Error.Type != "rate_limit_exceeded" || !strings.Contains(e.Error.Message, "try again in 2s") {
		t.Errorf("first fault: %d retry-after %q %s, want a 429 rate_limit_exceeded with retry-after 2", resp.StatusCode, resp.Header.Get("retry-after"), b)
	}

	resp = chatPost(t, s, body)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || json.Unmarshal(b, &e) != nil || e.Error.Type != "server_error" {
		t.Errorf("second fault: %d %s, want a 500 server_error", resp.StatusCode, b)
	}

	resp = chatPost(t, s, body)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || string(b) != `{"error":{"message":"custom"}}` {
		t.Errorf("third fault: %d %s, want the fault's own body", resp.StatusCode, b)
	}

	cs := readChatStream(t, chatPost(t, s, body).Body)
	if cs.text != "ok" || cs.finish != "stop" {
		t.Errorf("after the faults: %+v, want the answer", cs)
	}
}

func TestChatBadRequest(t *testing.T) {
	s := startServer(t)
	for _, body := range []string{`{`, `{"messages":[]}`} {
		if resp := chatPost(t, s, body); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("body %q: status %d, want 400", body, resp.StatusCode)
		}
	}
}

func TestPieces(t *testing.T) {
	for _, tt := range []struct {
		s    string
		size int
		most int // pieces at the most
	}{
		{"", 3, 0}, {"a", 1, 1}, {"ab", halves("ab"), 2}, {"héllo wörld", thirds("héllo wörld"), 3},
		{"€€", halves("€€"), 2}, {"abcdef", 6, 1}, {"abcdef", 0, 6}, {strings.Repeat("é", 40), 7, 12},
	} {
		got := pieces(tt.s, tt.size)
		if strings.Join(got, "") != tt.s || len(got) > tt.most {
			t.Errorf("pieces(%q, %d) = %q, want at most %d joining to the text", tt.s, tt.size, got, tt.most)
		}
		for _, p := range got {
			if p == "" || !utf8.ValidString(p) {
				t.Errorf("pieces(%q, %d): piece %q empty or cut inside a rune", tt.s, tt.size, p)
			}
		}
	}
}
