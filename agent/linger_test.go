package agent

import (
	"context"
	"io"
	"testing"
	"time"
)

// An agent that prints its final result and then does not exit is stopped
// after Linger, and what it said stands: the run is not a timeout.
func TestLingerAfterResult(t *testing.T) {
	old := Linger
	Linger = 100 * time.Millisecond
	defer func() { Linger = old }()
	result := `{"type":"result","subtype":"success","is_error":false,"result":"ok\n<ralph>done</ralph>","usage":{"input_tokens":3,"output_tokens":4},"total_cost_usd":0.5}`
	res, err := Run(context.Background(), Options{
		Argv:    []string{"sh", "-c", "printf '%s\\n' '" + result + "'; exec sleep 30"},
		Dir:     t.TempDir(),
		Format:  ClaudeStreamJSON,
		Timeout: 20 * time.Second,
		Grace:   100 * time.Millisecond,
		Output:  io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Lingered || res.Stopped != "" {
		t.Errorf("Lingered %v, Stopped %q; want true and none", res.Lingered, res.Stopped)
	}
	if res.FinalMessage != "ok\n<ralph>done</ralph>" || res.OutputTokens != 4 || !res.CostKnown {
		t.Errorf("result lost: %+v", res)
	}
}
