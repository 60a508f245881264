package agent

import (
	"context"
	"io"
	"testing"
	"time"
)

// TestLingerAfterResult: an agent that prints its final event and then does
// not exit is stopped after Linger, and what it said stands: the run is not
// a timeout, nor an error read from its stderr's noise, whatever the
// format, and a timeout due meanwhile does not throw it away.
func TestLingerAfterResult(t *testing.T) {
	old := Linger
	Linger = 300 * time.Millisecond
	defer func() { Linger = old }()
	for _, c := range []struct {
		name   string
		format Format
		events string
		final  string
	}{
		{"claude", ClaudeStreamJSON,
			`{"type":"result","subtype":"success","is_error":false,"result":"ok\n<ralph>done</ralph>","usage":{"input_tokens":3,"output_tokens":4},"total_cost_usd":0.5}`,
			"ok\n<ralph>done</ralph>"},
		{"codex", CodexJSON,
			`{"type":"thread.started","thread_id":"t1"}` + "\n" + `{"type":"turn.started"}` + "\n" +
				`{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"ok\n<ralph>done</ralph>"}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":3,"output_tokens":4}}`,
			"ok\n<ralph>done</ralph>"},
		{"gemini", GeminiStreamJSON,
			`{"type":"message","role":"assistant","content":"ok\n<ralph>done</ralph>","delta":true}` + "\n" +
				`{"type":"result","status":"success","stats":{"input_tokens":3,"output_tokens":4}}`,
			"ok\n<ralph>done</ralph>"},
	} {
		for _, timeout := range []time.Duration{20 * time.Second, 100 * time.Millisecond} {
			t.Run(c.name+"/timeout "+timeout.String(), func(t *testing.T) {
				script := "cat <<'END'\n" + c.events + "\nEND\necho 'Error: 503 Service Unavailable (telemetry)' >&2\nexec sleep 30"
				res, err := Run(context.Background(), Options{
					Argv:    []string{"sh", "-c", script},
					Dir:     t.TempDir(),
					Format:  c.format,
					Timeout: timeout,
					Grace:   100 * time.Millisecond,
					Output:  io.Discard,
				})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Lingered || res.Stopped != "" || res.Problem != nil {
					t.Errorf("Lingered %v, Stopped %q, Problem %v; want true, none, none", res.Lingered, res.Stopped, res.Problem)
				}
				if res.FinalMessage != c.final || res.OutputTokens != 4 {
					t.Errorf("result lost: %+v", res)
				}
			})
		}
	}
}
