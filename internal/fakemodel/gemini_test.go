package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// geminiBody builds a request the way the Gemini CLI does: its session
// context and the prompt as two parts of the first user turn, then the
// history of the model's function calls and their responses.
func geminiBody(t *testing.T, prompt string, toolResults int, extra map[string]any) string {
	t.Helper()
	contents := []any{map[string]any{"role": "user", "parts": []any{
		map[string]any{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"},
		map[string]any{"text": prompt},
	}}}
	for range toolResults {
		contents = append(contents,
			map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{"command": "true"}}}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "run_shell_command", "response": map[string]any{"output": "ok"}}}}},
		)
	}
	body := map[string]any{"contents": contents, "tools": []any{}}
	for k, v := range extra {
		body[k] = v
	}
	return mustJSON(t, body)
}

// postGemini sends a body to one of a model's calls (model:method) the
// way the Gemini CLI does.
func postGemini(t *testing.T, s *Server, call, body string) *http.Response {
	t.Helper()
	return post(t, s, "/v1beta/models/"+call, body, map[string]string{"x-goog-api-key": "fake"})
}

// geminiChunk is the part of a GenerateContentResponse the tests read.
type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         *string `json:"text"`
				FunctionCall *struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		Prompt     int `json:"promptTokenCount"`
		Candidates int `json:"candidatesTokenCount"`
		Total      int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
}

// geminiReadSSE reads a stream of data-only server-sent events, as the
// Gemini API sends them with alt=sse.
func geminiReadSSE(t *testing.T, r io.Reader) []geminiChunk {
	t.Helper()
	var chunks []geminiChunk
	for _, data := range readData(t, r) {
		var c geminiChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	return chunks
}

func TestGeminiStream(t *testing.T) {
	s := startServer(t, Conversation{
		Match: "US-007",
		Steps: []Step{
			{Tool: Shell("run_shell_command", "echo hi > hi.txt")},
			{Tool: &ToolCall{Name: "write_file", Input: map[string]any{"file_path": "a.txt", "content": "a\n"}}},
			{Text: "Wrote both files, é and all.\n<ralph>done</ralph>"},
		},
	})
	for step, want := range []struct {
		tool string
		args map[string]any
		text string
	}{
		{tool: "run_shell_command", args: map[string]any{"command": "echo hi > hi.txt"}},
		{tool: "write_file", args: map[string]any{"file_path": "a.txt", "content": "a\n"}},
		{text: "Wrote both files, é and all.\n<ralph>done</ralph>"},
	} {
		resp := postGemini(t, s, "gemini-2.5-pro:streamGenerateContent?alt=sse", geminiBody(t, "Your task: US-007", step, nil))
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("step %d: %s %s", step, resp.Status, resp.Header.Get("Content-Type"))
		}
		chunks := geminiReadSSE(t, resp.Body)
		if len(chunks) == 0 {
			t.Fatalf("step %d: no chunks", step)
		}
		var text strings.Builder
		var calls []string
		for i, c := range chunks {
			if len(c.Candidates) != 1 || c.Candidates[0].Content.Role != "model" || c.ModelVersion != "gemini-2.5-pro" {
				t.Fatalf("step %d chunk %d: %+v", step, i, c)
			}
			last := i == len(chunks)-1
			if got := c.Candidates[0].FinishReason; (got == "STOP") != last {
				t.Errorf("step %d chunk %d of %d: finishReason %q", step, i, len(chunks), got)
			}
			if (c.UsageMetadata != nil) != last {
				t.Errorf("step %d chunk %d of %d: usage %+v", step, i, len(chunks), c.UsageMetadata)
			}
			if last && (c.UsageMetadata.Prompt != Usage.Input || c.UsageMetadata.Candidates != Usage.Output || c.UsageMetadata.Total != Usage.Input+Usage.Output) {
				t.Errorf("step %d: usage %+v", step, *c.UsageMetadata)
			}
			for _, p := range c.Candidates[0].Content.Parts {
				if p.Text != nil {
					text.WriteString(*p.Text)
				}
				if fc := p.FunctionCall; fc != nil {
					b, _ := json.Marshal(fc.Args)
					calls = append(calls, fc.Name+" "+string(b))
					if fc.Name != want.tool {
						t.Errorf("step %d: call %s, want %s", step, fc.Name, want.tool)
					}
				}
			}
		}
		if text.String() != want.text {
			t.Errorf("step %d: text %q, want %q", step, text.String(), want.text)
		}
		wantCalls := 0
		if want.tool != "" {
			wantCalls = 1
			b, _ := json.Marshal(want.args)
			if calls[0] != want.tool+" "+string(b) {
				t.Errorf("step %d: call %s, want args %s", step, calls[0], b)
			}
		} else if len(chunks) < 2 {
			t.Errorf("step %d: the text came in %d chunk(s), want it streamed in pieces", step, len(chunks))
		}
		if len(calls) != wantCalls {
			t.Errorf("step %d: calls %q", step, calls)
		}
	}
}

func TestGeminiParse(t *testing.T) {
	d := &gemini{}
	parse := func(call, body string) (Request, error) {
		r, err := http.NewRequest("POST", "http://127.0.0.1/v1beta/models/"+call, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.SetPathValue("call", call)
		return d.parse(r, []byte(body))
	}
	req, err := parse("gemini-2.5-flash:streamGenerateContent", geminiBody(t, "Your task: US-001", 2, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !req.Stream || req.Model != "gemini-2.5-flash" || req.ToolResults != 2 || !strings.Contains(req.FirstUser, "Your task: US-001") || !strings.Contains(req.FirstUser, "session_context") {
		t.Errorf("parse = %+v", req)
	}
	// The session context and the prompt as two user contents, as the CLI
	// sends them to route a prompt; text after the model spoke is not the
	// first user message.
	two := `{"contents":[{"role":"user","parts":[{"text":"<session_context/>"}]},{"role":"user","parts":[{"text":"Your task: US-002"}]},` +
		`{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[{"text":"Your task: US-003"}]}]}`
	req, err = parse("m:streamGenerateContent", two)
	if err != nil {
		t.Fatal(err)
	}
	if req.FirstUser != "<session_context/>\nYour task: US-002" || req.ToolResults != 0 {
		t.Errorf("parse = %+v", req)
	}
	for _, bad := range []struct{ call, body string }{
		{"gemini-2.5-flash", `{}`},
		{"m:embedContent", `{}`},
		{"m:streamGenerateContent", `{"contents":[]}`},
		{"m:streamGenerateContent", `{"contents":[{"role":"model","parts":[{"text":"x"}]}]}`},
		{"m:streamGenerateContent", `[`},
	} {
		if req, err := parse(bad.call, bad.body); err == nil {
			t.Errorf("parse(%s, %s) = %+v, want an error", bad.call, bad.body, req)
		}
	}
}

// TestGeminiSideCalls: the CLI's own generateContent calls (routing, say)
// and countTokens are answered outside the conversations: with JSON in the
// shape of the schema asked for, and without taking a step or a fault.
func TestGeminiSideCalls(t *testing.T) {
	s := startServer(t, Conversation{
		Match:  "US-001",
		Steps:  []Step{{Text: "answer <ralph>done</ralph>"}},
		Faults: map[int][]Fault{0: {{Status: 429}}},
	})
	schema := map[string]any{
		"type": "OBJECT",
		"properties": map[string]any{
			"complexity_reasoning": map[string]any{"type": "STRING"},
			"complexity_score":     map[string]any{"type": "INTEGER", "minimum": 1.0},
			"model_choice":         map[string]any{"type": "string", "enum": []any{"flash", "pro"}},
			"flags":                map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"nested":               map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
		},
		"required": []any{"complexity_reasoning", "complexity_score"},
	}
	body := geminiBody(t, "Your task: US-001", 0, map[string]any{
		"generationConfig": map[string]any{"responseMimeType": "application/json", "responseJsonSchema": schema},
	})
	resp := postGemini(t, s, "gemini-2.5-flash-lite:generateContent", body)
	if resp.StatusCode != 200 {
		t.Fatalf("routing call: %s", resp.Status)
	}
	var c geminiChunk
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if len(c.Candidates) != 1 || len(c.Candidates[0].Content.Parts) != 1 || c.Candidates[0].Content.Parts[0].Text == nil {
		t.Fatalf("routing answer: %+v", c)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(*c.Candidates[0].Content.Parts[0].Text), &got); err != nil {
		t.Fatalf("routing answer is not JSON: %v", err)
	}
	b, _ := json.Marshal(got)
	if want := `{"complexity_reasoning":"fakemodel","complexity_score":1,"flags":[],"model_choice":"flash","nested":{"ok":false}}`; string(b) != want {
		t.Errorf("routing answer %s, want %s", b, want)
	}

	// Without a schema: a short text.
	resp = postGemini(t, s, "gemini-2.5-flash:generateContent", geminiBody(t, "Your task: US-001", 0, nil))
	c = geminiChunk{}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != 200 || c.Candidates[0].Content.Parts[0].Text == nil {
		t.Fatalf("plain side call: %s %v %+v", resp.Status, err, c)
	}

	resp = postGemini(t, s, "gemini-2.5-flash:countTokens", `{"contents":[{"role":"user","parts":[{"text":"Your task: US-001"}]}]}`)
	var count struct{ TotalTokens int }
	if err := json.NewDecoder(resp.Body).Decode(&count); err != nil || resp.StatusCode != 200 || count.TotalTokens != Usage.Input {
		t.Errorf("countTokens: %s %v %+v", resp.Status, err, count)
	}

	// The conversation's fault is still there for the conversation.
	resp = postGemini(t, s, "gemini-2.5-flash:streamGenerateContent?alt=sse", geminiBody(t, "Your task: US-001", 0, nil))
	if resp.StatusCode != 429 {
		t.Errorf("the conversation's first request: %s, want its 429", resp.Status)
	}
}

func TestGeminiFaults(t *testing.T) {
	s := startServer(t, Conversation{
		Match: "US-001",
		Steps: []Step{{Text: "fine"}},
		Faults: map[int][]Fault{0: {
			{Status: 429},
			{Status: 429, Headers: map[string]string{"retry-after": "2"}},
			{Status: 500},
			{Status: 503, Body: `{"error":{"code":503,"message":"custom","status":"UNAVAILABLE"}}`},
		}},
	})
	type googleError struct {
		Error struct {
			Code    int              `json:"code"`
			Message string           `json:"message"`
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	read := func(resp *http.Response) googleError {
		t.Helper()
		var e googleError
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatalf("%s: %v", resp.Status, err)
		}
		return e
	}
	post := func() *http.Response {
		return postGemini(t, s, "gemini-2.5-pro:streamGenerateContent?alt=sse", geminiBody(t, "Your task: US-001", 0, nil))
	}
	detail := func(e googleError, typ string) map[string]any {
		for _, d := range e.Error.Details {
			if d["@type"] == "type.googleapis.com/google.rpc."+typ {
				return d
			}
		}
		return nil
	}

	resp := post()
	e := read(resp)
	if resp.StatusCode != 429 || e.Error.Code != 429 || e.Error.Status != "RESOURCE_EXHAUSTED" {
		t.Errorf("first fault: %s %+v", resp.Status, e)
	}
	if q := detail(e, "QuotaFailure"); q == nil || !strings.Contains(mustJSON(t, q), "PerDay") {
		t.Errorf("the 429 is not for a daily quota (which gemini does not retry): %+v", e)
	}
	if detail(e, "RetryInfo") != nil {
		t.Errorf("a 429 without retry-after has a RetryInfo: %+v", e)
	}

	resp = post()
	e = read(resp)
	if ri := detail(e, "RetryInfo"); resp.StatusCode != 429 || ri == nil || ri["retryDelay"] != "2s" || !strings.Contains(e.Error.Message, "Please retry in 2s.") {
		t.Errorf("429 with retry-after 2: %s %+v", resp.Status, e)
	}

	resp = post()
	if e = read(resp); resp.StatusCode != 500 || e.Error.Code != 500 || e.Error.Status != "INTERNAL" || e.Error.Message == "" {
		t.Errorf("500: %s %+v", resp.Status, e)
	}

	resp = post()
	if e = read(resp); resp.StatusCode != 503 || e.Error.Message != "custom" {
		t.Errorf("503 with its own body: %s %+v", resp.Status, e)
	}

	resp = post()
	chunks := geminiReadSSE(t, resp.Body)
	if resp.StatusCode != 200 || len(chunks) != 1 || *chunks[0].Candidates[0].Content.Parts[0].Text != "fine" {
		t.Errorf("after the faults: %s %+v", resp.Status, chunks)
	}
}
