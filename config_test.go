package main

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/templates"
)

func TestParseHarness(t *testing.T) {
	cfg, err := parseHarness([]byte(`
[agent]
preset = "claude"
args = ["--model", "opus"]
timeout = "5m"
env = { FOO = "bar" }

[loop]
max_iterations = 7
max_cost_usd = 2

[[checks]]
name = "test"
run = "go test ./..."

[[checks]]
run = "go vet ./..."
required = false
timeout = "30s"

[git]
commit = false
`), "harness.toml")
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agent
	if got, want := strings.Join(a.Argv, " "), "claude -p --output-format stream-json --verbose --dangerously-skip-permissions --model opus"; got != want {
		t.Errorf("argv = %q, want %q", got, want)
	}
	if a.Timeout != 5*time.Minute || a.IdleTimeout != 10*time.Minute || a.PromptArg {
		t.Errorf("agent = %+v", a)
	}
	if len(a.Env) != 1 || a.Env[0] != "FOO=bar" {
		t.Errorf("env = %q", a.Env)
	}
	l := cfg.Limits
	if l.MaxIterations != 7 || l.MaxCostUSD != 2 || l.MaxAttempts != 5 {
		t.Errorf("limits = %+v", l)
	}
	if len(cfg.Checks) != 2 || cfg.Checks[1].Name != "check2" || cfg.Checks[1].Required || cfg.Checks[1].Timeout != 30*time.Second || cfg.Checks[0].Timeout != 10*time.Minute {
		t.Errorf("checks = %+v", cfg.Checks)
	}
	if cfg.Commit {
		t.Errorf("commit = true, want false")
	}
}

func TestParseHarnessCommandReplacesPresetProgram(t *testing.T) {
	cfg, err := parseHarness([]byte("[agent]\npreset = \"claude\"\ncommand = [\"/opt/claude\"]\nprompt = \"arg\"\n"), "h.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Agent.Argv[0]; got != "/opt/claude" || !cfg.Agent.PromptArg || len(cfg.Agent.Argv) != 6 {
		t.Errorf("argv = %q, prompt arg %v", cfg.Agent.Argv, cfg.Agent.PromptArg)
	}
}

// TestRetryBackoffOneError: a retry_backoff that is no duration, or a
// negative one, is one error, not also one for being 0.
func TestRetryBackoffOneError(t *testing.T) {
	for _, v := range []string{`"-1s"`, `"soon"`, `5`} {
		_, err := parseHarness([]byte("[agent]\npreset = \"claude\"\nretry_backoff = "+v+"\n"), "h.toml")
		if err == nil || strings.Count(err.Error(), "retry_backoff") != 1 {
			t.Errorf("retry_backoff = %s: error %v, want one about retry_backoff", v, err)
		}
	}
}

func TestParseHarnessErrors(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"syntax", "[agent]\npreset = = 1", []string{"h.toml:2:"}},
		{"no agent", "[loop]\nmax_iterations = 3\n", []string{"h.toml: agent: no agent"}},
		{"empty command", "[agent]\ncommand = []\n", []string{"h.toml: agent.command: empty command"}},
		{"all at once", `
[agent]
command = ["x"]
tiemout = "5m"
timeout = "5x"
idle_timeout = 3
prompt = "pipe"

[loop]
max_iterations = -1
max_attempts = 0
max_cost_usd = "lots"

[[checks]]
name = "a"
run = ""

[[checks]]
name = "a"
run = "true"
bogus = 1

[gti]
commit = true
`, []string{
			`h.toml: agent.tiemout: unknown key`,
			`h.toml: agent.timeout: "5x": invalid duration`,
			`h.toml: agent.idle_timeout: want a duration string such as "30m", got an integer`,
			`h.toml: agent.prompt: "pipe": want "stdin" or "arg"`,
			`h.toml: loop.max_iterations: -1: must not be negative`,
			`h.toml: loop.max_attempts: 0: must be at least 1`,
			`h.toml: loop.max_cost_usd: want a number, got a string`,
			`h.toml: checks[0].run: empty command`,
			`h.toml: checks[1].name: "a": duplicate name (first at checks[0])`,
			`h.toml: checks[1].bogus: unknown key`,
			`h.toml: gti: unknown key`,
		}},
		{"NUL bytes", "[agent]\npreset = \"claude\"\nargs = [\"a\\u0000b\"]\nenv = { FOO = \"x\\u0000\" }\n\n[[checks]]\nname = \"t\"\nrun = \"true\\u0000\"\n", []string{
			`h.toml: agent.args[0]: "a\x00b": a NUL byte cannot be passed to a program`,
			`h.toml: agent.env.FOO: "x\x00": a NUL byte cannot be passed to a program`,
			`h.toml: checks[0].run: "true\x00": a NUL byte cannot be passed to a program`,
		}},
		{"bad env names", "[agent]\npreset = \"claude\"\nenv = { \"A=B\" = \"x\", \"\" = \"y\" }\n", []string{
			`h.toml: agent.env: "A=B": not a variable's name (empty, or with = or NUL in it)`,
			`h.toml: agent.env: "": not a variable's name (empty, or with = or NUL in it)`,
		}},
		{"check names not plain", "[agent]\npreset = \"claude\"\n\n[[checks]]\nname = \"unit\\ntest\"\nrun = \"true\"\n\n[[checks]]\nname = \"lint\\t\"\nrun = \"true\"\n", []string{
			`h.toml: checks[0].name: "unit\ntest": U+000A is a control character: a check's name is a line of plain text`,
			`h.toml: checks[1].name: "lint\t": U+0009 is a control character`,
		}},
		{"no backoff", "[agent]\npreset = \"claude\"\nretry_backoff = \"0s\"\n", []string{
			`h.toml: agent.retry_backoff: "0s": must be more than 0: it is the first wait after a rate limit or a server error, doubled each time`,
		}},
		{"backoff past a month", "[agent]\npreset = \"claude\"\nretry_backoff = \"2540400h\"\n", []string{
			`h.toml: agent.retry_backoff: "2540400h": must be at most 744h0m0s (31 days), the longest wait for a rate limit`,
		}},
		// The byte itself is placed, not the string or comment holding it.
		{"invalid UTF-8 in a string", "[agent]\ncommand = [\"sh\", \"echo \xff\"]\n", []string{`h.toml:2:24: invalid UTF-8 byte: 0xff`}},
		{"invalid UTF-8 in a comment", "[agent]\ncommand = [\"sh\"] # caf\xc3\n", []string{`h.toml:2:23: invalid UTF-8 byte: 0xc3`}},
		{"after", `
[agent]
preset = "claude"

[[checks]]
name = "build"
run = "make"

[[checks]]
name = "selftest"
run = "./bin/app"
after = ["biuld", "selftest", "build"]

[[checks]]
name = "a"
run = "true"
after = ["c"]

[[checks]]
name = "b"
run = "true"
after = ["a"]

[[checks]]
name = "c"
run = "true"
after = ["b"]

[[checks]]
name = "lint"
run = "true"
after = "build"

[[checks]]
name = "vet"
run = "true"
after = ["build", 1]
`, []string{
			`h.toml: checks[1].after: "biuld": no check of that name`,
			`h.toml: checks[1].after: "selftest": a check cannot wait for itself`,
			`h.toml: checks[2].after: "a" → "c" → "b" → "a": the checks wait for each other in a circle: none of them could start`,
			`h.toml: checks[5].after: want an array of strings, got a string`,
			`h.toml: checks[6].after[1]: want a string, got an integer`,
		}},
		{"unknown preset", "[agent]\npreset = \"nope\"\n", []string{`h.toml: agent.preset: "nope": unknown preset (known: amp, claude, codex, copilot, cursor, gemini, opencode)`}},
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

func FuzzParseHarness(f *testing.F) {
	for _, seed := range []string{
		"[agent]\npreset = \"claude\"\n",
		"[agent]\ncommand = [\"x\"]\ntimeout = \"5m\"\n[loop]\nmax_iterations = 3\n[[checks]]\nrun = \"true\"\n",
		"[agent\n",
		"[[checks]]\nname = 1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseHarness(data, "h.toml")
		if err == nil && len(cfg.Agent.Argv) == 0 {
			t.Errorf("no error and no agent for %q", data)
		}
	})
}

// TestREADMEPresets checks that every preset the README's table of agents
// names is one ralph knows, with the prompt passed as the table says.
func TestREADMEPresets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, agents, _ := strings.Cut(string(readme), "\n## Agents\n")
	agents, _, _ = strings.Cut(agents, "\n#")
	row := regexp.MustCompile("(?m)^\\| `([a-z]+)` \\| `([^`]+)`(, prompt on stdin)?")
	rows := row.FindAllStringSubmatch(agents, -1)
	if len(rows) != 7 {
		t.Fatalf("found %d preset rows in README.md, want the 7 presets", len(rows))
	}
	for _, r := range rows {
		name, command, stdin := r[1], r[2], r[3] != ""
		p, ok := agent.LookupPreset(name)
		if !ok {
			t.Errorf("README.md names preset %q, which ralph does not know", name)
			continue
		}
		argv := p.Argv
		if p.PromptArg {
			argv = append(argv, agent.PromptArgs(p.PromptFlag, "PROMPT")...)
		}
		if got := strings.Join(argv, " "); got != strings.TrimSuffix(command, ", stdin /dev/null") || p.PromptArg == stdin {
			t.Errorf("preset %s runs %q (prompt as argument: %v); README.md says %q%s", name, got, p.PromptArg, command, r[3])
		}
	}
}

// TestREADMETemplateFields checks that the README's table of a prompt
// template's fields has every field of templates.Prompt, and of its Story,
// with its type, and no other.
func TestREADMETemplateFields(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n### harness.toml\n")
	section, _, _ = strings.Cut(section, "\n### ")
	row := regexp.MustCompile("(?m)^\\| (`\\.[^|]*) \\| ([^|]+) \\|")
	documented := map[string]string{} // field → type
	for _, r := range row.FindAllStringSubmatch(section, -1) {
		for _, name := range strings.Split(r[1], ", ") {
			documented[strings.Trim(name, "`")] = r[2]
		}
	}
	want := map[string]string{}
	var fields func(prefix string, typ reflect.Type)
	fields = func(prefix string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Type.Kind() == reflect.Struct {
				fields(prefix+"."+f.Name, f.Type)
				continue
			}
			want[prefix+"."+f.Name] = typeName(f.Type)
		}
	}
	fields("", reflect.TypeFor[templates.Prompt]())
	for name, typ := range want {
		if got, ok := documented[name]; !ok {
			t.Errorf("README.md does not list the template field %s", name)
		} else if got != typ {
			t.Errorf("README.md gives the template field %s the type %q, want %q", name, got, typ)
		}
	}
	for name := range documented {
		if _, ok := want[name]; !ok {
			t.Errorf("README.md lists the template field %s, which templates.Prompt does not have", name)
		}
	}
}

// typeName writes a template field's type as the README does: a list of
// structs as []{Name, Run string; Required bool}.
func typeName(typ reflect.Type) string {
	if typ.Kind() != reflect.Slice || typ.Elem().Kind() != reflect.Struct {
		return typ.String()
	}
	var b strings.Builder
	b.WriteString("[]{")
	elem := typ.Elem()
	for i := range elem.NumField() {
		f := elem.Field(i)
		b.WriteString(f.Name)
		switch {
		case i == elem.NumField()-1:
			b.WriteString(" " + f.Type.String() + "}")
		case elem.Field(i+1).Type != f.Type:
			b.WriteString(" " + f.Type.String() + "; ")
		default:
			b.WriteString(", ")
		}
	}
	return b.String()
}

// TestOneErrorPerValue: a count that must be 1 or more, given a negative
// number, is told what is wrong once, not that it is also below 1.
func TestOneErrorPerValue(t *testing.T) {
	for _, tt := range []struct{ text, key, want string }{
		{"[loop]\nmax_attempts = -1\n", "loop.max_attempts", "-1: must not be negative"},
		{"[loop]\nmax_attempts = 0\n", "loop.max_attempts", "0: must be at least 1"},
		{"[agent]\napi = \"anthropic\"\nmax_turns = -2\n", "agent.max_turns", "-2: must not be negative"},
		{"[agent]\napi = \"anthropic\"\nmax_output_tokens = 0\n", "agent.max_output_tokens", "0: must be at least 1"},
	} {
		_, err := parseHarness([]byte(tt.text), "h.toml")
		if err == nil {
			t.Fatalf("parseHarness(%q): no error", tt.text)
		}
		prefix := "h.toml: " + tt.key + ": "
		if n := strings.Count(err.Error(), prefix); n != 1 || !strings.Contains(err.Error(), prefix+tt.want) {
			t.Errorf("parseHarness(%q) = %v\nwant one error about %s: %q", tt.text, err, tt.key, prefix+tt.want)
		}
	}
}

// TestParseHarnessInlineChecks: an array of inline tables is [[checks]]
// written another way; an element that is no table is named.
func TestParseHarnessInlineChecks(t *testing.T) {
	cfg, err := parseHarness([]byte("checks = [{name = \"a\", run = \"true\"}, {run = \"false\", required = false}]\n[agent]\ncommand = [\"x\"]\n"), "h.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Checks) != 2 || cfg.Checks[0].Name != "a" || cfg.Checks[1].Name != "check2" || cfg.Checks[1].Required {
		t.Errorf("checks = %+v", cfg.Checks)
	}
	if cfg, err := parseHarness([]byte("checks = []\n[agent]\ncommand = [\"x\"]\n"), "h.toml"); err != nil || len(cfg.Checks) != 0 {
		t.Errorf("checks = []: %+v, %v", cfg.Checks, err)
	}
	_, err = parseHarness([]byte("checks = [{run = \"true\"}, \"go test\"]\n[agent]\ncommand = [\"x\"]\n"), "h.toml")
	if err == nil || !strings.Contains(err.Error(), "h.toml: checks[1]: want a table, got a string") {
		t.Errorf("error = %v, want checks[1] named", err)
	}
}
