package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/internal/fakemodel"
)

func TestParseHarnessAPI(t *testing.T) {
	self, err := selfPath()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, text string
		want       []string
	}{
		{"defaults", "[agent]\napi = \"anthropic\"\nmodel = \"claude-x\"\n", []string{
			self, "api-agent", "--api", "anthropic", "--model", "claude-x", "--api-key-env", "ANTHROPIC_API_KEY",
			"--max-turns", "50", "--max-output-tokens", "8192",
		}},
		{"everything", `[agent]
api = "openai"
model = "qwen2.5-coder:14b"
base_url = "http://localhost:11434/v1"
api_key_env = "OLLAMA_KEY"
max_turns = 7
max_output_tokens = 1000
price_input_per_mtok = 0.25
price_output_per_mtok = 2
prompt = "stdin"
env = { OLLAMA_KEY = "" }
`, []string{
			self, "api-agent", "--api", "openai", "--model", "qwen2.5-coder:14b", "--api-key-env", "OLLAMA_KEY",
			"--max-turns", "7", "--max-output-tokens", "1000", "--base-url", "http://localhost:11434/v1",
			"--price-input-per-mtok", "0.25", "--price-output-per-mtok", "2",
		}},
	}
	// The keys are set: they must be named on the command line, never
	// given there.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
	t.Setenv("OLLAMA_KEY", "sk-ollama-test-0123456789")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseHarness([]byte(tt.text), "h.toml")
			if err != nil {
				t.Fatal(err)
			}
			a := cfg.Agent
			if !slices.Equal(a.Argv, tt.want) {
				t.Errorf("argv = %q\nwant   %q", a.Argv, tt.want)
			}
			if a.Format != agent.ClaudeStreamJSON || a.PromptArg {
				t.Errorf("format %v, prompt arg %v; want claude-stream-json on stdin", a.Format, a.PromptArg)
			}
			for _, arg := range a.Argv {
				if strings.Contains(arg, "sk-") {
					t.Errorf("a key in argv: %q", a.Argv)
				}
			}
		})
	}
}

func TestParseHarnessAPIErrors(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"unknown api", "[agent]\napi = \"gemini\"\nmodel = \"x\"\n", []string{`h.toml: agent.api: "gemini": unknown API (known: anthropic, openai)`}},
		{"api type", "[agent]\napi = 1\n", []string{`h.toml: agent.api: want a string, got an integer`}},
		{"no model", "[agent]\napi = \"openai\"\n", []string{`h.toml: agent.model: missing: agent.api needs the model's name, e.g. model = "gpt-4.1"`}},
		{"empty model", "[agent]\napi = \"openai\"\nmodel = \" \"\n", []string{`h.toml: agent.model: empty`}},
		{"with preset", "[agent]\napi = \"anthropic\"\nmodel = \"m\"\npreset = \"claude\"\n", []string{`h.toml: agent.preset: cannot be used with agent.api`}},
		{"with command", "[agent]\napi = \"anthropic\"\nmodel = \"m\"\ncommand = [\"x\"]\n", []string{`h.toml: agent.command: cannot be used with agent.api`}},
		{"prompt arg", "[agent]\napi = \"anthropic\"\nmodel = \"m\"\nprompt = \"arg\"\n", []string{`h.toml: agent.prompt: "arg" cannot be used with agent.api`}},
		{"bad url", "[agent]\napi = \"openai\"\nmodel = \"m\"\nbase_url = \"ftp://x\"\n", []string{`h.toml: agent.base_url: "ftp://x": want an http or https URL such as "https://api.openai.com/v1"`}},
		{"key in key_env", "[agent]\napi = \"openai\"\nmodel = \"m\"\napi_key_env = \"sk-abc123\"\n", []string{`h.toml: agent.api_key_env: "sk-abc123": want the name of an environment variable`}},
		{"zero tokens", "[agent]\napi = \"openai\"\nmodel = \"m\"\nmax_output_tokens = 0\nmax_turns = -1\n", []string{
			`h.toml: agent.max_output_tokens: 0: must be at least 1`, `h.toml: agent.max_turns: -1: must not be negative`}},
		{"bad price", "[agent]\napi = \"openai\"\nmodel = \"m\"\nprice_input_per_mtok = \"cheap\"\n", []string{`h.toml: agent.price_input_per_mtok: want a number, got a string`}},
		{"orphans", "[agent]\ncommand = [\"x\"]\nmodel = \"m\"\nmax_turns = 3\n", []string{
			`h.toml: agent.model: only for the built-in API agent`, `h.toml: agent.max_turns: only for the built-in API agent`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseHarness([]byte(tt.text), "h.toml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// TestAPIScripts runs the scripts of testdata/script/apimodel: the loop
// with the built-in API agent against a fake model server, which each
// script's model.json scripts (a JSON list of fakemodel.Conversation) and
// whose base URL is $MODEL_URL.
func TestAPIScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           filepath.Join("testdata", "script", "apimodel"),
		UpdateScripts: *update,
		Setup: func(e *testscript.Env) error {
			b, err := os.ReadFile(filepath.Join(e.WorkDir, "model.json"))
			if err != nil {
				return err
			}
			var convs []fakemodel.Conversation
			if err := json.Unmarshal(b, &convs); err != nil {
				return fmt.Errorf("model.json: %w", err)
			}
			s, err := fakemodel.Start(convs...)
			if err != nil {
				return err
			}
			e.Defer(func() { s.Close() })
			e.Setenv("MODEL_URL", s.URL)
			return nil
		},
	})
}
