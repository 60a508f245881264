package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/internal/fakemodel"
)

// stopper is the run's stdout that stops the run, as ralph's SIGINT does,
// once a line of it contains a string.
type stopper struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	when   string
	cancel context.CancelFunc
}

func (s *stopper) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.Contains(p, []byte(s.when)) {
		s.cancel()
	}
	return s.buf.Write(p)
}

// runStopped runs the agent and stops it once its stdout shows when; the
// run must end as interrupted.
func runStopped(t testing.TB, o Options, when string) outcome {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &stopper{when: when, cancel: cancel}
	o = testOptions(t, o)
	o.Out = out
	o.Sleep = func(context.Context, time.Duration) error { return nil }
	code, err := Run(ctx, o)
	if !errors.Is(err, ErrInterrupted) || code != 1 {
		t.Fatalf("Run = %d, %v; want 1, %v\n%s", code, err, ErrInterrupted, out.buf.String())
	}
	raw := out.buf.String()
	return outcome{code: code, raw: raw, events: events(t, raw)}
}

// TestInterruptKeepsUsage: a run stopped while a tool runs (ralph's stop on
// agent.timeout, say) still ends with a result that holds the tokens and
// cost of its replies, for ralph to count against loop.max_tokens and
// loop.max_cost_usd; it is no success and has no final message.
func TestInterruptKeepsUsage(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			s := startFake(t, fakemodel.Conversation{
				Match: "task-slow",
				Steps: []fakemodel.Step{
					{Text: "Quick one.", Tool: fakemodel.Shell("shell", "true")},
					{Text: "Now a slow one.", Tool: fakemodel.Shell("shell", "sleep 60")},
					{Text: "never asked"},
				},
			})
			o := runStopped(t, Options{API: a.name, BaseURL: a.base(s.URL), Prompt: "task-slow", PriceInput: 3, PriceOutput: 15},
				`"command":"sleep 60"`)
			if n := o.count("result", ""); n != 1 {
				t.Fatalf("%d result events, want 1:\n%s", n, o.raw)
			}
			r := o.result(t)
			if r["subtype"] != "error_during_execution" || r["is_error"] != false || r["result"] != "" || r["num_turns"] != 2.0 {
				t.Errorf("result = %v", r)
			}
			if in, out := usageOf(t, r); in != 200 || out != 40 {
				t.Errorf("usage = %v in, %v out; want 200, 40", in, out)
			}
			if cost, _ := r["total_cost_usd"].(float64); fmt.Sprintf("%.6f", cost) != "0.001200" {
				t.Errorf("total_cost_usd = %v, want 200*3/1e6 + 40*15/1e6 = 0.0012", r["total_cost_usd"])
			}
		})
	}
}

// TestInterruptMidStream: a reply cut off by the stop counts with the usage
// the server had reported of it (the Messages API says the input tokens at
// message_start), and so does an attempt the network cut off before it,
// tried again: each was billed as far as it went. A reply of the OpenAI API,
// whose usage and cost come at its end, counts nothing and leaves the
// cost of the replies before it known.
func TestInterruptMidStream(t *testing.T) {
	start := func(text string) string {
		return sseEvents(
			map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_2", "type": "message", "role": "assistant", "content": []any{},
				"model": "m", "usage": map[string]any{"input_tokens": 1000, "cache_read_input_tokens": 500, "output_tokens": 1}}},
			map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}},
			map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}},
		)
	}
	t.Run(Anthropic, func(t *testing.T) {
		h := &replay{hold: true, answers: []string{
			anthropicAnswer("Look.", [3]string{"toolu_1", "shell", `{"command":"true"}`}),
			start("First try.\n"), // cut off by the network, and tried again
			start("Thinking it over.\n"),
		}}
		// The first try of the second request is cut off: the connection
		// closes after what it sent.
		url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			cut := h.served() == 1
			h.ServeHTTP(w, req)
			if cut {
				panic(http.ErrAbortHandler)
			}
		}))
		o := runStopped(t, Options{API: Anthropic, BaseURL: url, Prompt: "go", PriceInput: 3, PriceOutput: 15}, "Thinking it over.")
		if n := o.count("system", "api_retry"); n != 1 {
			t.Errorf("%d api_retry events, want 1:\n%s", n, o.raw)
		}
		r := o.result(t)
		if r["num_turns"] != 1.0 || r["is_error"] != false {
			t.Errorf("result = %v", r)
		}
		// 10 in and 5 out of the first reply; 1500 in and 1 out of the
		// try the network cut off, which was billed as far as it went;
		// as much of the one cut off by the stop.
		if in, out := usageOf(t, r); in != 3010 || out != 7 {
			t.Errorf("usage = %v in, %v out; want 3010, 7", in, out)
		}
		want := (10*3 + 2*(1000*3+500*0.3) + 7*15) / 1e6
		if cost, _ := r["total_cost_usd"].(float64); fmt.Sprintf("%.8f", cost) != fmt.Sprintf("%.8f", want) {
			t.Errorf("total_cost_usd = %v, want %v", r["total_cost_usd"], want)
		}
	})
	t.Run(OpenAI, func(t *testing.T) {
		first := strings.Replace(openAIAnswer("Look.", [3]string{"call_1", "shell", `{"command":"true"}`}),
			`"total_tokens":15}`, `"total_tokens":15,"cost":0.25}`, 1)
		h := &replay{hold: true, answers: []string{
			first,
			`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Thinking it over.\n"},"finish_reason":null}]}` + "\n\n",
		}}
		o := runStopped(t, Options{API: OpenAI, BaseURL: serve(t, h) + "/v1", Prompt: "go"}, "Thinking it over.")
		r := o.result(t)
		if in, out := usageOf(t, r); in != 10 || out != 5 {
			t.Errorf("usage = %v in, %v out; want 10, 5", in, out)
		}
		if r["total_cost_usd"] != 0.25 {
			t.Errorf("total_cost_usd = %v, want the first reply's 0.25", r["total_cost_usd"])
		}
	})
}
