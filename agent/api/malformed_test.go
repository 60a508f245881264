package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// replay is a model server that answers the n-th request with the n-th
// body, as server-sent events written out by hand, and keeps the requests.
// With hold, it holds the last answer's stream open until the client goes:
// a reply still streaming when the run is stopped.
type replay struct {
	mu       sync.Mutex
	answers  []string
	requests []string
	hold     bool
}

func (r *replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.requests)
	r.requests = append(r.requests, string(body))
	r.mu.Unlock()
	if n >= len(r.answers) {
		http.Error(w, "no more answers", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, r.answers[n])
	w.(http.Flusher).Flush()
	if r.hold && n == len(r.answers)-1 {
		<-req.Context().Done()
	}
}

// served is how many requests r has had.
func (r *replay) served() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

// sseEvents writes events as the Messages API streams them.
func sseEvents(events ...map[string]any) string {
	var b strings.Builder
	for _, ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", ev["type"], data)
	}
	return b.String()
}

// anthropicAnswer is a streamed message: a text block, then tool_use
// blocks whose input arrives as the given partial_json pieces.
func anthropicAnswer(text string, calls ...[3]string) string {
	events := []map[string]any{
		{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "content": []any{},
			"model": "m", "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}},
		{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}},
		{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}},
		{"type": "content_block_stop", "index": 0},
	}
	stop := "end_turn"
	for i, c := range calls {
		stop = "tool_use"
		events = append(events,
			map[string]any{"type": "content_block_start", "index": i + 1, "content_block": map[string]any{"type": "tool_use", "id": c[0], "name": c[1], "input": map[string]any{}}},
			map[string]any{"type": "content_block_delta", "index": i + 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": c[2][:len(c[2])/2]}},
			map[string]any{"type": "content_block_delta", "index": i + 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": c[2][len(c[2])/2:]}},
			map[string]any{"type": "content_block_stop", "index": i + 1},
		)
	}
	events = append(events,
		map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 5}},
		map[string]any{"type": "message_stop"},
	)
	return sseEvents(events...)
}

// openAIAnswer is a streamed chat completion: text, then tool calls whose
// arguments arrive in two pieces.
func openAIAnswer(text string, calls ...[3]string) string {
	var b strings.Builder
	chunk := func(delta map[string]any, finish any) {
		data, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(&b, "data: %s\n\n", data)
	}
	chunk(map[string]any{"role": "assistant", "content": text}, nil)
	finish := "stop"
	for i, c := range calls {
		finish = "tool_calls"
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c[0], "type": "function",
			"function": map[string]any{"name": c[1], "arguments": c[2][:len(c[2])/2]}}}}, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
			"function": map[string]any{"arguments": c[2][len(c[2])/2:]}}}}, nil)
	}
	chunk(map[string]any{}, finish)
	b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// TestMalformedToolCalls: a tool call whose arguments are not JSON, one
// whose arguments are not an object, and one of a tool that does not
// exist are each answered with a tool error the model reads, and the run
// goes on.
func TestMalformedToolCalls(t *testing.T) {
	calls := [][3]string{
		{"call_a", "write_file", `{"path": "a.txt", "content": "x"`},
		{"call_b", "read_file", `["a.txt"]`},
		{"call_c", "delete_everything", `{}`},
	}
	for _, tt := range []struct {
		api    string
		answer func(string, ...[3]string) string
		base   func(string) string
	}{
		{Anthropic, anthropicAnswer, func(u string) string { return u }},
		{OpenAI, openAIAnswer, func(u string) string { return u + "/v1" }},
	} {
		t.Run(tt.api, func(t *testing.T) {
			r := &replay{answers: []string{
				tt.answer("Let me try.", calls...),
				tt.answer("I'll stop here.\n<ralph>done</ralph>"),
			}}
			url := serve(t, r)
			o := runAgent(t, Options{API: tt.api, BaseURL: tt.base(url), Prompt: "go"})
			if o.code != 0 {
				t.Fatalf("exit %d:\n%s", o.code, o.raw)
			}
			if len(r.requests) != 2 {
				t.Fatalf("%d requests, want 2", len(r.requests))
			}
			second := r.requests[1]
			for _, want := range []string{
				`write_file: the arguments are not a JSON object: unexpected end of JSON input`,
				`read_file: the arguments are not a JSON object: json: cannot unmarshal array`,
				`there is no tool \"delete_everything\"; the tools are shell, read_file, write_file, edit_file, list_files, search`,
			} {
				if !strings.Contains(second, want) {
					t.Errorf("the second request does not tell the model %q:\n%s", want, second)
				}
			}
			if tt.api == Anthropic && strings.Count(second, `"is_error":true`) != 3 {
				t.Errorf("want 3 tool results with is_error:\n%s", second)
			}
			if tt.api == Anthropic && !strings.Contains(second, `"id":"call_a","name":"write_file","input":{}`) {
				// The API takes only an object as a tool call's input.
				t.Errorf("the broken call is not sent back with an empty input:\n%s", second)
			}
			if tt.api == OpenAI && !strings.Contains(second, `"arguments":"{\"path\": \"a.txt\", \"content\": \"x\""`) {
				t.Errorf("the broken call is not sent back as the model made it:\n%s", second)
			}
			if n := strings.Count(o.raw, `"is_error":true`); n != 3 {
				t.Errorf("the stream shows %d failed tool results, want 3:\n%s", n, o.raw)
			}
		})
	}
}

// TestMalformedStream: events that are not JSON are passed over, and a
// stream that ends without its last event is retried, then given up.
func TestMalformedStream(t *testing.T) {
	broken := "event: message_start\ndata: {not json\n\n" + "data: [nonsense\n\n"
	r := &replay{answers: []string{broken, broken, broken, broken}}
	url := serve(t, r)
	o := runAgent(t, Options{API: Anthropic, BaseURL: url, Prompt: "go"})
	if o.code != 1 {
		t.Fatalf("exit %d:\n%s", o.code, o.raw)
	}
	res := o.result(t)
	text, _ := res["result"].(string)
	if res["is_error"] != true || !strings.Contains(text, "stream cut off") || !strings.Contains(text, "gave up after 4 attempts") {
		t.Errorf("result = %v", res)
	}
	if len(r.requests) != 4 {
		t.Errorf("%d requests, want 4 (1 + 3 retries)", len(r.requests))
	}
}

// TestInputAtStart: a server that gives a tool call's whole input in its
// content_block_start, with no input_json_delta after it (as some servers
// speaking the Messages API do), has the call run with that input.
func TestInputAtStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := sseEvents(
		map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "content": []any{},
			"model": "m", "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}},
		map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": map[string]any{"path": "notes.txt"}}},
		map[string]any{"type": "content_block_stop", "index": 0},
		map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use"}, "usage": map[string]any{"output_tokens": 5}},
		map[string]any{"type": "message_stop"},
	)
	r := &replay{answers: []string{start, anthropicAnswer("Read it.\n<ralph>done</ralph>")}}
	url := serve(t, r)
	o := runAgent(t, Options{API: Anthropic, BaseURL: url, Dir: dir, Prompt: "go"})
	if o.code != 0 {
		t.Fatalf("exit %d:\n%s", o.code, o.raw)
	}
	if len(r.requests) != 2 {
		t.Fatalf("%d requests, want 2", len(r.requests))
	}
	second := r.requests[1]
	if !strings.Contains(second, "the notes") || !strings.Contains(second, `"input":{"path":"notes.txt"}`) {
		t.Errorf("the call did not run with its input:\n%s", second)
	}
}

// TestTextBlocks: the text blocks of one reply are shown one after the
// other, each from the start of a line, and the final message has them so
// too: a claim in a block of its own stands on its own line, as ralph's
// reply protocol wants it, whether the reply streams or comes whole.
func TestTextBlocks(t *testing.T) {
	for _, tt := range []struct {
		name   string
		blocks []string
		want   string
	}{
		{"two", []string{"All done, wrote the file.", "<ralph>done</ralph>"}, "All done, wrote the file.\n<ralph>done</ralph>"},
		{"ends its line", []string{"All done.\n", "<ralph>done</ralph>"}, "All done.\n<ralph>done</ralph>"},
		{"empty one", []string{"All done.", "", "<ralph>done</ralph>"}, "All done.\n<ralph>done</ralph>"},
	} {
		events := []map[string]any{
			{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "content": []any{},
				"model": "m", "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}},
		}
		var content []any
		for i, text := range tt.blocks {
			events = append(events,
				map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}},
				map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": text}},
				map[string]any{"type": "content_block_stop", "index": i},
			)
			content = append(content, map[string]any{"type": "text", "text": text})
		}
		events = append(events,
			map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]any{"output_tokens": 5}},
			map[string]any{"type": "message_stop"},
		)
		whole, err := json.Marshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
			"content": content, "stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})
		if err != nil {
			t.Fatal(err)
		}
		for _, answer := range []struct {
			how, contentType, body string
		}{
			{"streamed", "text/event-stream", sseEvents(events...)},
			{"whole", "application/json", string(whole)},
		} {
			t.Run(tt.name+"/"+answer.how, func(t *testing.T) {
				url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					w.Header().Set("Content-Type", answer.contentType)
					io.WriteString(w, answer.body)
				}))
				o := runAgent(t, Options{API: Anthropic, BaseURL: url, Prompt: "go"})
				if o.code != 0 {
					t.Fatalf("exit %d:\n%s", o.code, o.raw)
				}
				final, _ := o.result(t)["result"].(string)
				if final != tt.want {
					t.Errorf("result = %q, want %q", final, tt.want)
				}
				// The claim must stand on the last line, as the loop reads
				// it (loop.ParseClaim).
				if text := strings.TrimRight(final, "\n"); text[strings.LastIndexByte(text, '\n')+1:] != "<ralph>done</ralph>" {
					t.Errorf("the claim is not the last line of %q", final)
				}
				var shown []string
				for _, ev := range o.events {
					if ev["type"] != "assistant" {
						continue
					}
					for _, c := range ev["message"].(map[string]any)["content"].([]any) {
						shown = append(shown, c.(map[string]any)["text"].(string))
					}
				}
				if got := strings.Join(shown, "|"); !strings.HasSuffix(got, "|<ralph>done</ralph>") {
					t.Errorf("shown as %q: the claim is not a message of its own", got)
				}
			})
		}
	}
}

// TestParallelCallsWithoutIndex: parallel tool calls from a server that
// gives them no index (Gemini's OpenAI-compatible endpoint) or index 0
// each (some proxies) are told apart by their ids; a piece without an id
// goes on with the call before it.
func TestParallelCallsWithoutIndex(t *testing.T) {
	a := `{"path":"a.txt","content":"A"}`
	b := `{"path":"b.txt","content":"B"}`
	piece := func(index any, id, name, args string) map[string]any {
		p := map[string]any{"function": map[string]any{"arguments": args}}
		if index != nil {
			p["index"] = index
		}
		if id != "" {
			p["id"] = id
			p["type"] = "function"
			p["function"].(map[string]any)["name"] = name
		}
		return p
	}
	for _, tt := range []struct {
		name   string
		chunks [][]map[string]any
	}{
		{"no index", [][]map[string]any{
			{piece(nil, "call_a", "write_file", a)},
			{piece(nil, "call_b", "write_file", b)},
		}},
		{"index 0 each", [][]map[string]any{
			{piece(0, "call_a", "write_file", a)},
			{piece(0, "call_b", "write_file", b)},
		}},
		{"no index, in pieces", [][]map[string]any{
			{piece(nil, "call_a", "write_file", a[:10])},
			{piece(nil, "", "", a[10:])},
			{piece(nil, "call_b", "write_file", b[:10])},
			{piece(nil, "", "", b[10:])},
		}},
		{"index 0 each, in pieces", [][]map[string]any{
			{piece(0, "call_a", "write_file", a[:10])},
			{piece(0, "", "", a[10:])},
			{piece(0, "call_b", "write_file", b[:10])},
			{piece(0, "", "", b[10:])},
		}},
		{"no index, one chunk", [][]map[string]any{
			{piece(nil, "call_a", "write_file", a), piece(nil, "call_b", "write_file", b)},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var answer strings.Builder
			chunk := func(delta map[string]any, finish any) {
				data, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
					"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
				fmt.Fprintf(&answer, "data: %s\n\n", data)
			}
			chunk(map[string]any{"role": "assistant", "content": "Writing both."}, nil)
			for _, c := range tt.chunks {
				chunk(map[string]any{"tool_calls": c}, nil)
			}
			chunk(map[string]any{}, "tool_calls")
			answer.WriteString("data: [DONE]\n\n")
			r := &replay{answers: []string{answer.String(), openAIAnswer("Wrote both.\n<ralph>done</ralph>")}}
			dir := t.TempDir()
			o := runAgent(t, Options{API: OpenAI, BaseURL: serve(t, r) + "/v1", Dir: dir, Prompt: "go"})
			if o.code != 0 {
				t.Fatalf("exit %d:\n%s", o.code, o.raw)
			}
			for name, want := range map[string]string{"a.txt": "A", "b.txt": "B"} {
				if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
					t.Errorf("%s = %q, %v; want %q", name, got, err, want)
				}
			}
			if len(r.requests) != 2 {
				t.Fatalf("%d requests, want 2", len(r.requests))
			}
			second := r.requests[1]
			for _, want := range []string{`"tool_call_id":"call_a"`, `"tool_call_id":"call_b"`} {
				if !strings.Contains(second, want) {
					t.Errorf("the second request lacks %s:\n%s", want, second)
				}
			}
			if strings.Contains(second, "not a JSON object") {
				t.Errorf("a call's arguments were merged:\n%s", second)
			}
		})
	}
}

// TestWhitespaceText: a reply whose text is only whitespace ("\n\n" before
// a tool call, as models send) is sent back without that text block: the
// Messages API refuses a text block with no other text (400 "text content
// blocks must contain non-whitespace text"), which would end the run. The
// assistant turn keeps its tool call, and a turn left with nothing says so.
func TestWhitespaceText(t *testing.T) {
	r := &replay{answers: []string{
		anthropicAnswer("\n\n", [3]string{"call_a", "shell", `{"command": "true"}`}),
		anthropicAnswer("Done.\n<ralph>done</ralph>"),
	}}
	o := runAgent(t, Options{API: Anthropic, BaseURL: serve(t, r), Prompt: "go"})
	if o.code != 0 || len(r.requests) != 2 {
		t.Fatalf("exit %d, %d requests:\n%s", o.code, len(r.requests), o.raw)
	}
	var req struct {
		Messages []anthropicMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.requests[1]), &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		if len(m.Content) == 0 {
			t.Errorf("a %s message has no content:\n%s", m.Role, r.requests[1])
		}
		for _, b := range m.Content {
			if b.Type == "text" && strings.TrimSpace(b.Text) == "" {
				t.Errorf("a %s message has the text block %q:\n%s", m.Role, b.Text, r.requests[1])
			}
		}
	}

	a := newAnthropic(Options{Model: "m"})
	body, err := a.body([]message{{Role: "user", Text: "go"}, {Role: "assistant", Text: " \n\t"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if got := req.Messages[1].Content; len(got) != 1 || strings.TrimSpace(got[0].Text) == "" {
		t.Errorf("an assistant turn of whitespace is sent as %+v, want one text block with text", got)
	}
}

// TestArgumentsObject: some OpenAI-compatible servers (llama.cpp, TGI) send
// a tool call's arguments as a JSON object, not as the string that holds
// one. The call runs with that object, streamed or whole, and the chunk
// that holds it is read with its text and finish_reason.
func TestArgumentsObject(t *testing.T) {
	call := map[string]any{"id": "call_a", "type": "function",
		"function": map[string]any{"name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "A"}}}
	chunk, err := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
			"delta": map[string]any{"role": "assistant", "content": "Writing.", "tool_calls": []any{map[string]any{"index": 0, "id": "call_a", "type": "function", "function": call["function"]}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": "Writing.", "tool_calls": []any{call}}}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5}})
	if err != nil {
		t.Fatal(err)
	}
	for _, answer := range []struct {
		how, contentType, body string
	}{
		{"streamed", "text/event-stream", "data: " + string(chunk) + "\n\ndata: [DONE]\n\n"},
		{"whole", "application/json", string(whole)},
	} {
		t.Run(answer.how, func(t *testing.T) {
			url, n := serveFirst(t, answer.contentType, answer.body, openAIAnswer("Wrote it.\n<ralph>done</ralph>"))
			dir := t.TempDir()
			o := runAgent(t, Options{API: OpenAI, BaseURL: url + "/v1", Dir: dir, Prompt: "go"})
			if o.code != 0 {
				t.Fatalf("exit %d:\n%s", o.code, o.raw)
			}
			if got, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(got) != "A" {
				t.Errorf("a.txt = %q, %v; want %q", got, err, "A")
			}
			if !strings.Contains(o.raw, `"text":"Writing."`) {
				t.Errorf("the text of the call's chunk is not shown:\n%s", o.raw)
			}
			if n.Load() != 2 || len(o.waits) != 0 {
				t.Errorf("%d requests, waits %v; want 2 requests and no retry", n.Load(), o.waits)
			}
		})
	}
}

// TestErrorInWholeAnswer: an error the Messages API sends as a 200 answer
// in one piece ({"type":"error","error":{…}}, as it sends one in the middle
// of a stream) is the error it names, not an empty reply: overloaded is
// retried after a backoff, as a 529 is, and an invalid request is not.
func TestErrorInWholeAnswer(t *testing.T) {
	for _, tt := range []struct {
		typ    string
		status int
		code   int
		waits  int
	}{
		{"overloaded_error", 529, 0, 1},
		{"invalid_request_error", 400, 1, 0},
	} {
		t.Run(tt.typ, func(t *testing.T) {
			url, _ := serveFirst(t, "application/json", fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":"said in a 200"}}`, tt.typ),
				anthropicAnswer("Done.\n<ralph>done</ralph>"))
			o := runAgent(t, Options{API: Anthropic, BaseURL: url, Prompt: "go"})
			if o.code != tt.code || len(o.waits) != tt.waits {
				t.Fatalf("exit %d, waits %v; want exit %d and %d waits:\n%s", o.code, o.waits, tt.code, tt.waits, o.raw)
			}
			want := fmt.Sprintf(`"error_status":%d`, tt.status)
			if tt.code != 0 {
				want = fmt.Sprintf(`"api_error_status":%d`, tt.status)
			}
			if !strings.Contains(o.raw, want) || !strings.Contains(o.raw, "said in a 200") {
				t.Errorf("the stream lacks %s and the error's message:\n%s", want, o.raw)
			}
		})
	}
}

// serveFirst serves body, of contentType, as the answer to the first
// request, and the stream then to every later one; n counts the requests.
func serveFirst(t *testing.T, contentType, body, then string) (url string, n *atomic.Int32) {
	n = new(atomic.Int32)
	url = serve(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if n.Add(1) > 1 {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, then)
			return
		}
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	return url, n
}
