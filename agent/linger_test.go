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
		{"opencode", OpenCodeJSON,
			`{"type":"step_start","part":{}}` + "\n" + `{"type":"text","part":{"text":"ok\n<ralph>done</ralph>"}}` + "\n" +
				`{"type":"step_finish","part":{"reason":"stop","tokens":{"input":3,"output":4}}}`,
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

// TestLingerGoesOn: opencode may go on after a step that finished without
// calling tools (after compacting the conversation, say). A step that starts
// within the linger is watched as the run was: its timeouts apply again, and
// the last step's end starts a linger of its own.
func TestLingerGoesOn(t *testing.T) {
	old := Linger
	Linger = 300 * time.Millisecond
	defer func() { Linger = old }()
	step := func(text string) string {
		return `{"type":"step_start","part":{}}` + "\n" + `{"type":"text","part":{"text":"` + text + `"}}` + "\n" +
			`{"type":"step_finish","part":{"reason":"stop","tokens":{"input":3,"output":4}}}` + "\n"
	}
	run := func(t *testing.T, script string, timeout time.Duration) Result {
		t.Helper()
		res, err := Run(context.Background(), Options{
			Argv:    []string{"sh", "-c", script},
			Dir:     t.TempDir(),
			Format:  OpenCodeJSON,
			Timeout: timeout,
			Grace:   100 * time.Millisecond,
			Output:  io.Discard,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Run("a second step ends the run", func(t *testing.T) {
		script := "cat <<'END'\n" + step("first") + "END\nsleep 0.1\ncat <<'END'\n" + step("second\\n<ralph>done</ralph>") + "END\nexec sleep 30"
		res := run(t, script, 20*time.Second)
		if !res.Lingered || res.Stopped != "" || res.FinalMessage != "second\n<ralph>done</ralph>" || res.OutputTokens != 8 {
			t.Errorf("Lingered %v, Stopped %q, FinalMessage %q, OutputTokens %d; want true, none, the second step's, 8", res.Lingered, res.Stopped, res.FinalMessage, res.OutputTokens)
		}
	})
	t.Run("a step that hangs is timed out", func(t *testing.T) {
		// The first step ends; the second starts within the linger and
		// hangs: the timeout, held off during the linger, stops it.
		script := "cat <<'END'\n" + step("<ralph>done</ralph>") + "END\nsleep 0.1\necho '{\"type\":\"step_start\",\"part\":{}}'\nexec sleep 30"
		res := run(t, script, time.Second)
		if res.Lingered || res.Stopped != StoppedTimeout || res.FinalMessage != "" {
			t.Errorf("Lingered %v, Stopped %q, FinalMessage %q; want false, %q, none", res.Lingered, res.Stopped, res.FinalMessage, StoppedTimeout)
		}
	})
}
