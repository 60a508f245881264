package agent

import (
	"math"
	"testing"
	"time"
)

// TestImpossibleTokenCounts: a count below zero is no count, and counts
// whose sum would overflow saturate, in every format that reports tokens:
// the run's totals never go down, and max_tokens holds.
func TestImpossibleTokenCounts(t *testing.T) {
	const max = math.MaxInt64
	for _, c := range []struct {
		name            string
		parse           func(string) Result
		input           string
		wantIn, wantOut int64
	}{
		{"claude, below zero", func(s string) Result { _, r := parse(s, 1<<20); return r },
			`{"type":"result","subtype":"success","num_turns":1,"result":"ok","usage":{"input_tokens":-5000,"output_tokens":-3,"cache_read_input_tokens":7}}` + "\n", 7, 0},
		{"claude, overflowing", func(s string) Result { _, r := parse(s, 1<<20); return r },
			`{"type":"result","subtype":"success","num_turns":1,"result":"ok","usage":{"input_tokens":9223372036854775807,"output_tokens":1,"cache_read_input_tokens":9223372036854775807}}` + "\n", max, 1},
		{"codex, below zero", func(s string) Result { _, r := parseCodex(s, 1<<20, time.Time{}); return r },
			`{"type":"turn.completed","usage":{"input_tokens":-5000,"output_tokens":80}}` + "\n", 0, 80},
		{"gemini, below zero", func(s string) Result { _, r := parseGemini(s, 1<<20, 0); return r },
			`{"type":"result","status":"success","stats":{"total_tokens":-1,"input_tokens":-5000,"output_tokens":-2}}` + "\n", 0, 0},
		{"gemini, a total below the input", func(s string) Result { _, r := parseGemini(s, 1<<20, 0); return r },
			`{"type":"result","status":"success","stats":{"total_tokens":-9223372036854775808,"input_tokens":10,"output_tokens":2}}` + "\n", 10, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := c.parse(c.input)
			if res.InputTokens != c.wantIn || res.OutputTokens != c.wantOut {
				t.Errorf("tokens %d in, %d out; want %d, %d", res.InputTokens, res.OutputTokens, c.wantIn, c.wantOut)
			}
		})
	}
}
