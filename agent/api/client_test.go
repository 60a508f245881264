package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/internal/fakemodel"
)

// apis are the two APIs, each with the base URL that points it at a fake
// model server.
var apis = []struct {
	name string
	base func(url string) string
}{
	{Anthropic, func(url string) string { return url }},
	{OpenAI, func(url string) string { return url + "/v1" }},
}

func startFake(t testing.TB, convs ...fakemodel.Conversation) *fakemodel.Server {
	t.Helper()
	s, err := fakemodel.Start(convs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if t.Failed() {
			t.Logf("fake model server log:\n%s", strings.Join(s.Log(), "\n"))
		}
	})
	return s
}

// outcome is what a run printed and returned.
type outcome struct {
	code   int
	events []map[string]any
	raw    string
	waits  []time.Duration
}

// result returns the run's result event.
func (o outcome) result(t testing.TB) map[string]any {
	t.Helper()
	for i := len(o.events) - 1; i >= 0; i-- {
		if o.events[i]["type"] == "result" {
			return o.events[i]
		}
	}
	t.Fatalf("no result event in:\n%s", o.raw)
	return nil
}

// count counts the events of a type (and subtype, when given).
func (o outcome) count(typ, subtype string) int {
	n := 0
	for _, ev := range o.events {
		if ev["type"] == typ && (subtype == "" || ev["subtype"] == subtype) {
			n++
		}
	}
	return n
}

// runAgent runs the agent in a fresh directory with o's settings; waits
// are recorded instead of slept.
func runAgent(t testing.TB, o Options) outcome {
	t.Helper()
	o = testOptions(t, o)
	var out bytes.Buffer
	var mu sync.Mutex
	var res outcome
	o.Out = &out
	o.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		// A wait goes on past the keep-alive it printed: it is one
		// wait, slept in parts.
		if n := len(res.waits); n > 0 && strings.HasSuffix(out.String(), `"type":"stream_event"}`+"\n") {
			res.waits[n-1] += d
			return nil
		}
		res.waits = append(res.waits, d)
		return nil
	}
	code, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	res.code = code
	res.raw = out.String()
	res.events = events(t, res.raw)
	return res
}

// testOptions fills in what a test's run needs and o does not say: a work
// directory, a key, a model, three retries.
func testOptions(t testing.TB, o Options) Options {
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Key == "" {
		o.Key = "sk-fake-key"
	}
	if o.Model == "" {
		o.Model = "fake-model"
	}
	o.Retries = 3
	return o
}

// events are the lines of a run's stdout, each a JSON object.
func events(t testing.TB, stdout string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		evs = append(evs, ev)
	}
	return evs
}

func usageOf(t testing.TB, ev map[string]any) (in, out float64) {
	t.Helper()
	u, ok := ev["usage"].(map[string]any)
	if !ok {
		t.Fatalf("no usage in %v", ev)
	}
	return u["input_tokens"].(float64) + u["cache_read_input_tokens"].(float64) + u["cache_creation_input_tokens"].(float64), u["output_tokens"].(float64)
}

// TestConversation: the model writes a file through a tool call whose
// arguments arrive in pieces, runs a command, and finishes; the text is
// shown, the tool calls and results are in the stream, and the usage is
// summed over the turns.
func TestConversation(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			s := startFake(t, fakemodel.Conversation{
				Match: "task-write",
				Steps: []fakemodel.Step{
					{Text: "I'll write the file.", Tool: &fakemodel.ToolCall{Name: "write_file", Input: map[string]any{"path": "src/hello.txt", "content": "hello\n"}}},
					{Tool: fakemodel.Shell("shell", "cat src/hello.txt; echo $RALPH_SECRET_KEY_TEST")},
					{Text: "Wrote it.\nLearning: the tools work\n<ralph>done</ralph>"},
				},
			})
			t.Setenv("RALPH_SECRET_KEY_TEST", "sk-do-not-show")
			dir := t.TempDir()
			o := runAgent(t, Options{API: a.name, BaseURL: a.base(s.URL), Dir: dir, Prompt: "do task-write",
				KeyEnv: "RALPH_SECRET_KEY_TEST", PriceInput: 3, PriceOutput: 15})
			if o.code != 0 {
				t.Fatalf("exit %d:\n%s", o.code, o.raw)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "src", "hello.txt")); err != nil || string(b) != "hello\n" {
				t.Errorf("src/hello.txt = %q, %v", b, err)
			}
			r := o.result(t)
			if r["subtype"] != "success" || r["is_error"] != false || r["num_turns"] != 3.0 {
				t.Errorf("result = %v", r)
			}
			if got, want := r["result"], "Wrote it.\nLearning: the tools work\n<ralph>done</ralph>"; got != want {
				t.Errorf("result text = %q, want %q", got, want)
			}
			in, out := usageOf(t, r)
			if in != 300 || out != 60 {
				t.Errorf("usage = %v in, %v out; want 300, 60", in, out)
			}
			if cost, _ := r["total_cost_usd"].(float64); fmt.Sprintf("%.6f", cost) != "0.001800" {
				t.Errorf("total_cost_usd = %v, want 300*3/1e6 + 60*15/1e6 = 0.0018", r["total_cost_usd"])
			}
			for _, want := range []string{
				`"subtype":"init"`,
				`{"text":"I'll write the file.","type":"text"}`,
				`"name":"write_file","type":"tool_use"`,
				`"input":{"content":"hello\n","path":"src/hello.txt"}`,
				`"type":"tool_result"`,
				`hello\n\n[exit status 0]`,
			} {
				if !strings.Contains(o.raw, want) {
					t.Errorf("stream lacks %s:\n%s", want, o.raw)
				}
			}
			if strings.Contains(o.raw, "sk-do-not-show") {
				t.Errorf("the key reached the shell:\n%s", o.raw)
			}
		})
	}
}

// TestRetries: a 429 whose retry-after is short, and a 500, are waited out
// within the run, which then succeeds; the waits are shown as api_retry
// events.
func TestRetries(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			s := startFake(t, fakemodel.Conversation{
				Match: "task-retry",
				Steps: []fakemodel.Step{
					{Tool: fakemodel.Shell("shell", "true")},
					{Text: "Done.\n<ralph>done</ralph>"},
				},
				Faults: map[int][]fakemodel.Fault{
					0: {{Status: 429, Headers: map[string]string{"retry-after": "7"}}},
					1: {{Status: 500}, {Status: 503}},
				},
			})
			o := runAgent(t, Options{API: a.name, BaseURL: a.base(s.URL), Prompt: "task-retry"})
			if o.code != 0 {
				t.Fatalf("exit %d:\n%s", o.code, o.raw)
			}
			if len(o.waits) != 3 || o.waits[0] != 7*time.Second || o.waits[1] != time.Second || o.waits[2] != 2*time.Second {
				t.Errorf("waits = %v, want [7s 1s 2s]", o.waits)
			}
			if n := o.count("system", "api_retry"); n != 3 {
				t.Errorf("%d api_retry events, want 3:\n%s", n, o.raw)
			}
			if !strings.Contains(o.raw, `"error_status":429`) || !strings.Contains(o.raw, `"error_status":500`) {
				t.Errorf("the retries do not name their statuses:\n%s", o.raw)
			}
			if r := o.result(t); r["result"] != "Done.\n<ralph>done</ralph>" {
				t.Errorf("result = %v", r)
			}
		})
	}
}

// TestRetryKeepAlive: a wait within the run for a rate limit to lift
// prints a keep-alive every few seconds, as a reply that streams in
// without text does, so that ralph's agent.idle_timeout, which sees no
// output during the wait otherwise, does not stop a run that waits as the
// server asked.
func TestRetryKeepAlive(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			s := startFake(t, fakemodel.Conversation{
				Match:  "task-keepalive",
				Steps:  []fakemodel.Step{{Text: "Done.\n<ralph>done</ralph>"}},
				Faults: map[int][]fakemodel.Fault{0: {{Status: 429, Headers: map[string]string{"retry-after": "32"}}}},
			})
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			o := runAgent(t, Options{API: a.name, BaseURL: a.base(s.URL), Prompt: "task-keepalive", Now: func() time.Time { return now }})
			if o.code != 0 {
				t.Fatalf("exit %d:\n%s", o.code, o.raw)
			}
			if len(o.waits) != 1 || o.waits[0] != 32*time.Second {
				t.Errorf("waits = %v, want [32s]", o.waits)
			}
			// Between the api_retry and the reply: one keep-alive for
			// each keepAlive the wait lasted (32s: 6 of 5s, then 2s).
			var pings, retries int
			for _, ev := range o.events {
				switch {
				case ev["type"] == "system" && ev["subtype"] == "api_retry":
					retries++
				case ev["type"] == "stream_event" && retries == 1:
					pings++
				case ev["type"] == "assistant" || ev["type"] == "result":
					retries = 2
				}
			}
			if pings != 6 {
				t.Errorf("%d keep-alives during a 32s wait, want 6:\n%s", pings, o.raw)
			}
		})
	}
}

// TestRateLimitLater: a rate limit that lifts later than the run would
// wait ends the run with an error result that says when it lifts, which
// ralph reads as a rate limit with that reset time.
func TestRateLimitLater(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			s := startFake(t, fakemodel.Conversation{
				Match:  "task-limit",
				Steps:  []fakemodel.Step{{Text: "never"}},
				Faults: map[int][]fakemodel.Fault{0: {{Status: 429, Headers: map[string]string{"retry-after": "3600"}}}},
			})
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			o := runAgent(t, Options{API: a.name, BaseURL: a.base(s.URL), Prompt: "task-limit", Now: func() time.Time { return now }})
			if o.code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", o.code, o.raw)
			}
			r := o.result(t)
			if r["is_error"] != true || r["api_error_status"] != 429.0 || r["api_error_type"] != "rate_limit_error" {
				t.Errorf("result = %v", r)
			}
			text, _ := r["result"].(string)
			if !strings.Contains(text, "resets at 2026-01-02T04:04:05Z") {
				t.Errorf("result %q does not say when the limit lifts", text)
			}
			p := agent.Classify(text, now)
			if p == nil || p.Kind != agent.RateLimited || !p.ResetAt.Equal(now.Add(time.Hour)) {
				t.Errorf("Classify(%q) = %+v, want a rate limit lifting at %s", text, p, now.Add(time.Hour))
			}
			if len(o.waits) != 0 {
				t.Errorf("waited %v", o.waits)
			}
		})
	}
}

// TestPermanentErrors: a bad key, a forbidden model and an unknown model
// end the run at once, with a hint naming the key to fix.
func TestPermanentErrors(t *testing.T) {
	for _, a := range apis {
		for _, tt := range []struct {
			status int
			typ    string
			hint   string
		}{
			{401, "authentication_error", "check the key in MY_KEY (agent.api_key_env)"},
			{403, "permission_error", `its access to agent.model = "fake-model"`},
			{404, "not_found_error", `check agent.model = "fake-model" and agent.base_url = `},
		} {
			t.Run(fmt.Sprintf("%s/%d", a.name, tt.status), func(t *testing.T) {
				s := startFake(t, fakemodel.Conversation{
					Match:  "task-perm",
					Steps:  []fakemodel.Step{{Text: "never"}},
					Faults: map[int][]fakemodel.Fault{0: {{Status: tt.status}}},
				})
				o := runAgent(t, Options{API: a.name, BaseURL: a.base(s.URL), Prompt: "task-perm", KeyEnv: "MY_KEY"})
				r := o.result(t)
				text, _ := r["result"].(string)
				if o.code != 1 || r["is_error"] != true || r["api_error_status"] != float64(tt.status) || r["api_error_type"] != tt.typ {
					t.Errorf("exit %d, result %v", o.code, r)
				}
				if !strings.Contains(text, tt.hint) {
					t.Errorf("result %q lacks the hint %q", text, tt.hint)
				}
				if p := agent.Classify(text, time.Now()); tt.status == 404 && (p == nil || p.Kind != agent.Permanent) {
					t.Errorf("Classify(%q) = %+v, want a permanent error", text, p)
				}
				if len(o.waits) != 0 {
					t.Errorf("retried a permanent error: waits %v", o.waits)
				}
			})
		}
	}
}

// TestLongErrorKeepsHint: a long error body is cut, not the hint after it,
// which says what to fix.
func TestLongErrorKeepsHint(t *testing.T) {
	long := strings.Repeat("the server has much to say about this. ", 20)
	s := startFake(t, fakemodel.Conversation{
		Match:  "task-long",
		Steps:  []fakemodel.Step{{Text: "never"}},
		Faults: map[int][]fakemodel.Fault{0: {{Status: 404, Body: `{"error":{"type":"not_found_error","message":"` + long + `"}}`}}},
	})
	o := runAgent(t, Options{API: "anthropic", BaseURL: s.URL, Prompt: "task-long", KeyEnv: "MY_KEY"})
	text, _ := o.result(t)["result"].(string)
	if !strings.Contains(text, "(ralph sends to "+s.URL) || !strings.Contains(text, "the server has much") {
		t.Errorf("result %q lacks the hint or the error", text)
	}
}

// TestQuotaRunOut: OpenAI's 429 insufficient_quota is no rate limit: the
// account's credit or plan ran out, and no wait brings it back. It is not
// retried, and ralph's loop reads it as a permanent problem.
func TestQuotaRunOut(t *testing.T) {
	s := startFake(t, fakemodel.Conversation{
		Match: "task-quota",
		Steps: []fakemodel.Step{{Text: "never"}},
		Faults: map[int][]fakemodel.Fault{0: {{Status: 429,
			Body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`}}},
	})
	o := runAgent(t, Options{API: "openai", BaseURL: s.URL + "/v1", Prompt: "task-quota", KeyEnv: "MY_KEY"})
	r := o.result(t)
	text, _ := r["result"].(string)
	if o.code != 1 || r["api_error_type"] != "billing_error" {
		t.Errorf("exit %d, result %v", o.code, r)
	}
	if !strings.Contains(text, "quota or credit ran out") {
		t.Errorf("result %q lacks the hint", text)
	}
	if len(o.waits) != 0 {
		t.Errorf("retried a quota run out: waits %v", o.waits)
	}
}

// TestMissingKey: no key in the variable is a permanent error naming it;
// an OpenAI-compatible server of one's own may do without.
func TestMissingKey(t *testing.T) {
	var out bytes.Buffer
	code, err := Run(context.Background(), Options{API: Anthropic, Model: "m", KeyEnv: "NO_SUCH_KEY", Dir: t.TempDir(), Out: &out})
	if err != nil || code != 1 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	for _, want := range []string{`"api_error_type":"authentication_error"`, `NO_SUCH_KEY is not set (agent.api_key_env)`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
	s := startFake(t, fakemodel.Conversation{Match: "local", Steps: []fakemodel.Step{{Text: "hi"}}})
	out.Reset()
	code, err = Run(context.Background(), Options{API: OpenAI, Model: "m", BaseURL: s.URL + "/v1", KeyEnv: "NO_SUCH_KEY", Dir: t.TempDir(), Out: &out, Prompt: "local"})
	if err != nil || code != 0 {
		t.Fatalf("keyless local server: Run = %d, %v\n%s", code, err, out.String())
	}
}

// cutter is a proxy in front of a server that cuts the first answer's
// stream after n bytes by dropping the connection.
type cutter struct {
	target string
	n      int
	cut    atomic.Int32
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, _ := http.NewRequest(r.Method, c.target+r.URL.Path, r.Body)
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	if c.cut.Add(1) > 1 {
		io.Copy(w, resp.Body)
		return
	}
	io.CopyN(w, resp.Body, int64(c.n))
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler) // the connection drops in the middle
}

func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ErrorLog: nil}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestStreamCut: a stream that breaks off in the middle of a tool call is
// sent again, and the half-received call is not run.
func TestStreamCut(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			s := startFake(t, fakemodel.Conversation{
				Match: "task-cut",
				Steps: []fakemodel.Step{
					{Text: "Writing.", Tool: &fakemodel.ToolCall{Name: "shell", Input: map[string]any{"command": "echo x >> count.txt"}}},
					{Text: "<ralph>done</ralph>"},
				},
			})
			proxy := serve(t, &cutter{target: s.URL, n: 700})
			dir := t.TempDir()
			o := runAgent(t, Options{API: a.name, BaseURL: a.base(proxy), Prompt: "task-cut", Dir: dir})
			if o.code != 0 {
				t.Fatalf("exit %d:\n%s", o.code, o.raw)
			}
			if n := o.count("system", "api_retry"); n != 1 {
				t.Errorf("%d api_retry events, want 1:\n%s", n, o.raw)
			}
			if !strings.Contains(o.raw, "stream cut off") {
				t.Errorf("the retry does not say the stream was cut:\n%s", o.raw)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "count.txt")); string(b) != "x\n" {
				t.Errorf("count.txt = %q: the command ran other than once", b)
			}
			// The try cut off counts as far as the server reported it:
			// Anthropic's stream says its input first, OpenAI's at its end.
			want := 3 * fakemodel.Usage.Input
			if a.name == OpenAI {
				want = 2 * fakemodel.Usage.Input
			}
			if in, _ := usageOf(t, o.result(t)); in != float64(want) {
				t.Errorf("input tokens = %v, want %d", in, want)
			}
		})
	}
}

// TestMaxTurns: a model that keeps calling tools is stopped after
// MaxTurns replies; the last calls still run, and the final message ends
// with a note, so no claim of the model's can be read from it.
func TestMaxTurns(t *testing.T) {
	s := startFake(t, fakemodel.Conversation{
		Match: "task-busy",
		Steps: []fakemodel.Step{
			{Text: "One.", Tool: fakemodel.Shell("shell", "echo 1 >> n.txt")},
			{Text: "Two.\n<ralph>done</ralph>", Tool: fakemodel.Shell("shell", "echo 2 >> n.txt")},
			{Text: "never asked"},
		},
	})
	dir := t.TempDir()
	o := runAgent(t, Options{API: Anthropic, BaseURL: s.URL, Prompt: "task-busy", Dir: dir, MaxTurns: 2})
	if o.code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", o.code, o.raw)
	}
	r := o.result(t)
	if r["subtype"] != "error_max_turns" || r["is_error"] != false || r["num_turns"] != 2.0 {
		t.Errorf("result = %v", r)
	}
	if text, _ := r["result"].(string); !strings.HasSuffix(text, "[ralph api agent: stopped after agent.max_turns = 2 replies]") {
		t.Errorf("result text = %q", text)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "n.txt")); string(b) != "1\n2\n" {
		t.Errorf("n.txt = %q", b)
	}
}

// TestWholeReply: a server (a proxy, say) that answers a request for a
// stream with the whole message as JSON is read as such, tool call and
// all.
func TestWholeReply(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			s := startFake(t, fakemodel.Conversation{
				Match: "task-whole",
				Steps: []fakemodel.Step{
					{Text: "Looking.", Tool: fakemodel.Shell("shell", "echo hi")},
					{Text: "Done whole.\n<ralph>done</ralph>"},
				},
			})
			// The proxy asks the fake for a reply in one piece.
			proxy := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body map[string]any
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				body["stream"] = false
				delete(body, "stream_options")
				b, _ := json.Marshal(body)
				resp, err := http.Post(s.URL+r.URL.Path, "application/json", bytes.NewReader(b))
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				defer resp.Body.Close()
				w.Header().Set("content-type", resp.Header.Get("content-type"))
				w.WriteHeader(resp.StatusCode)
				io.Copy(w, resp.Body)
			}))
			o := runAgent(t, Options{API: a.name, BaseURL: a.base(proxy), Prompt: "do task-whole"})
			if o.code != 0 {
				t.Fatalf("exit %d:\n%s", o.code, o.raw)
			}
			r := o.result(t)
			if got, want := r["result"], "Done whole.\n<ralph>done</ralph>"; got != want {
				t.Errorf("result text = %q, want %q", got, want)
			}
			if r["num_turns"] != 2.0 {
				t.Errorf("num_turns = %v, want 2 (the tool call was read)", r["num_turns"])
			}
		})
	}
}

// TestKeyControlChar: a key with a control character in it (the \r a file
// with Windows line endings leaves) cannot go into a header: the run ends
// at once with a permanent error naming the variable, not the key, and
// sends nothing.
func TestKeyControlChar(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			r := &replay{}
			o := runAgent(t, Options{API: a.name, BaseURL: a.base(serve(t, r)), Prompt: "go", KeyEnv: "MY_KEY", Key: "sk-secret-fake\r\n"})
			res := o.result(t)
			text, _ := res["result"].(string)
			if o.code != 1 || res["is_error"] != true || res["api_error_type"] != "authentication_error" {
				t.Errorf("exit %d, result %v", o.code, res)
			}
			if !strings.HasPrefix(text, "MY_KEY holds a control character (agent.api_key_env)") {
				t.Errorf("result %q does not name the variable", text)
			}
			if p := agent.Classify(text, time.Now()); p != nil && p.Kind != agent.Permanent {
				t.Errorf("Classify(%q) = %+v", text, p)
			}
			if strings.Contains(o.raw, "sk-secret") {
				t.Errorf("the key is shown:\n%s", o.raw)
			}
			if r.served() != 0 || len(o.waits) != 0 {
				t.Errorf("%d requests, waits %v; want none", r.served(), o.waits)
			}
		})
	}
}

// TestURLPassword: a password in agent.base_url (http://user:pass@host) is
// not shown in the hints that name base_url, which go into the result, the
// ledger and ralph's stderr.
func TestURLPassword(t *testing.T) {
	notFound := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"type":"not_found_error","message":"no such model"}}`, http.StatusNotFound)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, tt := range []struct {
		name, url, hint string
	}{
		{"not found", notFound, "check agent.model"},
		{"unreachable", closed, "reachable?"},
	} {
		for _, a := range apis {
			t.Run(tt.name+"/"+a.name, func(t *testing.T) {
				base := strings.Replace(a.base(tt.url), "http://", "http://bob:hunter2secret@", 1)
				o := runAgent(t, Options{API: a.name, BaseURL: base, Prompt: "go"})
				text, _ := o.result(t)["result"].(string)
				if o.code != 1 || !strings.Contains(text, tt.hint) || !strings.Contains(text, "bob:xxxxx@127.0.0.1") {
					t.Errorf("exit %d, result %q; want the hint %q with the URL's password hidden", o.code, text, tt.hint)
				}
				if strings.Contains(o.raw, "hunter2secret") {
					t.Errorf("the password is shown:\n%s", o.raw)
				}
			})
		}
	}
}

// TestRetryAfterHuge: a retry-after far beyond any limit (999999999
// seconds, an HTTP date in the year 9999) still ends the run with the time
// the server said, but ralph waits no longer than a month for it, as for
// any reset read from an agent's words.
func TestRetryAfterHuge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	month := 31 * 24 * time.Hour
	for _, after := range []string{"999999999", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		for _, status := range []int{429, 529} {
			t.Run(fmt.Sprintf("%d/%s", status, after), func(t *testing.T) {
				s := startFake(t, fakemodel.Conversation{
					Match:  "task-limit",
					Steps:  []fakemodel.Step{{Text: "never"}},
					Faults: map[int][]fakemodel.Fault{0: {{Status: status, Headers: map[string]string{"retry-after": after}}}},
				})
				o := runAgent(t, Options{API: Anthropic, BaseURL: s.URL, Prompt: "task-limit", Now: func() time.Time { return now }})
				text, _ := o.result(t)["result"].(string)
				if o.code != 1 || len(o.waits) != 0 {
					t.Fatalf("exit %d, waits %v:\n%s", o.code, o.waits, o.raw)
				}
				p := agent.Classify(text, now)
				if p == nil || !p.ResetAt.Equal(now.Add(month)) {
					t.Errorf("Classify(%q) = %+v, want a reset a month from now, %s", text, p, now.Add(month))
				}
			})
		}
	}
}
