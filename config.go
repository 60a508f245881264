package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/agent/api"
	"github.com/ralph-harness/ralph/checks"
	"github.com/ralph-harness/ralph/internal/glob"
	"github.com/ralph-harness/ralph/internal/lazyre"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/internal/textpos"
	"github.com/ralph-harness/ralph/loop"
	"github.com/ralph-harness/ralph/prd"
)

// The names of the three files, relative to the work directory.
const (
	harnessFile  = loop.HarnessFile
	prdFile      = loop.PRDFile
	progressFile = loop.ProgressFile
)

// previewOptions are the loop's options for a command that shows what the
// loop would do but needs no harness.toml: the limits of what could be read
// of it (the defaults when nothing could).
func previewOptions(dir string) loop.Options {
	cfg, _ := loadHarness(dir)
	return loop.Options{Dir: dir, Config: cfg}
}

// loadHarness reads and checks harness.toml in dir. With an error, the
// Config is what could be read (see parseHarness), for a caller that looks
// for more problems; a template that could not be read is left out of it,
// its problem told.
func loadHarness(dir string) (loop.Config, error) {
	path := filepath.Join(dir, harnessFile)
	data, err := readbuf.ReadFile(nil, path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return loop.Config{}, usageErrorf("%s not found in %s (run `ralph init` to create one)", harnessFile, dir)
		}
		return loop.Config{}, fmt.Errorf("read %s: %w", harnessFile, err)
	}
	// The template is looked for even when a key is wrong: every problem
	// is told at once.
	cfg, err := parseHarness(data, harnessFile)
	if name := cfg.PromptTemplateName; name != "" {
		text, terr := readbuf.ReadFile(nil, cfg.TemplatePath(dir))
		if terr == nil {
			terr = blankTemplate(name, text)
		}
		cfg.PromptTemplate = string(text)
		if terr != nil {
			err = errors.Join(err, fmt.Errorf("%s: prompt.template: %w", harnessFile, terr))
			cfg.PromptTemplate, cfg.PromptTemplateName = "", ""
		}
	}
	if err != nil {
		return cfg, &usageError{err: err}
	}
	return cfg, nil
}

// blankTemplate refuses a prompt template file with nothing in it, or
// only white space: every iteration would send the agent an empty prompt.
func blankTemplate(name string, text []byte) error {
	switch {
	case len(text) == 0:
		return fmt.Errorf("%q: the file is empty: every prompt would be empty; write the prompt in it, or remove the key to use the built-in one", name)
	case len(bytes.TrimSpace(text)) == 0:
		return fmt.Errorf("%q: the file holds only white space: every prompt would be empty; write the prompt in it, or remove the key to use the built-in one", name)
	}
	return nil
}

// parseHarness decodes harness.toml data and checks every key, reporting all
// problems at once. Unknown keys are errors: a misspelt limit must never be
// silently ignored by a loop that runs overnight. With an error, the Config
// is what could be read, for a caller that looks for more problems.
func parseHarness(data []byte, name string) (loop.Config, error) {
	var raw map[string]any
	// The parser skips a byte order mark, and counts its offsets after it.
	text := bytes.TrimPrefix(data, []byte("\ufeff"))
	// The parser places an invalid byte at the start of the string or
	// comment that holds it: the byte itself is found here.
	if i := invalidUTF8(text); i >= 0 {
		return loop.Config{}, fmt.Errorf("%s: invalid UTF-8 byte: %#02x", textpos.At(name, text, i), text[i])
	}
	if _, err := toml.Decode(string(text), &raw); err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			// Placed from the error's offset: the parser's own line and
			// column can name the next line, or another column.
			return loop.Config{}, fmt.Errorf("%s: %s", textpos.At(name, text, perr.Position.Start), perr.Message)
		}
		return loop.Config{}, fmt.Errorf("%s: %w", name, err)
	}
	d := &tomlDecoder{file: name}
	cfg := loop.Config{
		Commit: true,
		Guard:  loop.Guard{Tests: loop.DefaultTests},
		Limits: loop.Limits{StallAfter: loop.DefaultStallAfter},
	}
	agentKeys := &agentTable{set: map[string]bool{}}
	d.table(raw, "", func(key string, v any) {
		switch key {
		case "agent":
			d.table(v, key, func(k string, v any) { d.agentKey(agentKeys, k, v) })
		case "loop":
			d.table(v, key, func(k string, v any) { d.loopKey(&cfg.Limits, k, v) })
		case "checks":
			cfg.Checks = d.checks(v)
		case "git":
			d.table(v, key, func(k string, v any) {
				if k != "commit" {
					d.unknown("git." + k)
					return
				}
				cfg.Commit = d.boolean(v, "git.commit")
				cfg.CommitAsked = cfg.Commit
			})
		case "guard":
			d.table(v, key, func(k string, v any) { d.guardKey(&cfg.Guard, k, v) })
		case "prompt":
			d.table(v, key, func(k string, v any) {
				if k != "template" {
					d.unknown("prompt." + k)
					return
				}
				cfg.PromptTemplateName = d.str(v, "prompt.template")
			})
		default:
			d.unknown(key)
		}
	})
	cfg.Agent = d.agent(agentKeys)
	if cfg.Limits.MaxAttempts == 0 {
		cfg.Limits.MaxAttempts = loop.DefaultMaxAttempts
	}
	if len(d.errs) > 0 {
		return cfg, errors.Join(d.errs...)
	}
	return cfg, nil
}

// tomlDecoder walks decoded TOML by hand so that every problem is reported,
// each naming its key, instead of stopping at the first.
type tomlDecoder struct {
	file string
	errs []error
	// told holds the keys an error was reported for.
	told map[string]bool
}

func (d *tomlDecoder) errorf(key, format string, args ...any) {
	d.errs = append(d.errs, fmt.Errorf("%s: %s: %s", d.file, key, fmt.Sprintf(format, args...)))
	if d.told == nil {
		d.told = map[string]bool{}
	}
	d.told[key] = true
}

// wrong reports whether an error was reported for key, or for an element
// of it (key[2]): a value read as its zero value, which the checks of
// what it means must not report again.
func (d *tomlDecoder) wrong(key string) bool {
	for k := range d.told {
		if k == key || strings.HasPrefix(k, key+"[") {
			return true
		}
	}
	return false
}

func (d *tomlDecoder) unknown(key string) {
	d.errorf(key, "unknown key")
}

// table calls fn for each key of v in sorted order, so messages are stable.
func (d *tomlDecoder) table(v any, key string, fn func(k string, v any)) {
	t, ok := v.(map[string]any)
	if !ok {
		d.errorf(key, "want a table, got %s", tomlType(v))
		return
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fn(k, t[k])
	}
}

func (d *tomlDecoder) str(v any, key string) string {
	s, ok := v.(string)
	if !ok {
		d.errorf(key, "want a string, got %s", tomlType(v))
	}
	if strings.ContainsRune(s, 0) {
		// Commands, arguments and the environment all end at a NUL:
		// the loop would fail at its first iteration.
		d.errorf(key, "%q: a NUL byte cannot be passed to a program", s)
	}
	return s
}

func (d *tomlDecoder) boolean(v any, key string) bool {
	b, ok := v.(bool)
	if !ok {
		d.errorf(key, "want true or false, got %s", tomlType(v))
	}
	return b
}

func (d *tomlDecoder) count(v any, key string) int64 {
	n, ok := v.(int64)
	if !ok {
		d.errorf(key, "want a whole number, got %s", tomlType(v))
		return 0
	}
	if n < 0 {
		d.errorf(key, "%d: must not be negative", n)
		return 0
	}
	return n
}

// positive is count for a value that must be 1 or more: each wrong value
// gets one error.
func (d *tomlDecoder) positive(v any, key string) int64 {
	if n, ok := v.(int64); ok && n == 0 {
		d.errorf(key, "0: must be at least 1")
	}
	return d.count(v, key)
}

func (d *tomlDecoder) number(v any, key string) float64 {
	switch n := v.(type) {
	case int64:
		v = float64(n)
	case float64:
	default:
		d.errorf(key, "want a number, got %s", tomlType(v))
		return 0
	}
	f := v.(float64)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		d.errorf(key, "%g: want a finite number", f)
		return 0
	}
	if f < 0 {
		d.errorf(key, "%g: must not be negative", f)
		return 0
	}
	return f
}

func (d *tomlDecoder) duration(v any, key string) time.Duration {
	s, ok := v.(string)
	if !ok {
		d.errorf(key, "want a duration string such as \"30m\", got %s", tomlType(v))
		return 0
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.errorf(key, "%q: invalid duration (want e.g. \"90s\", \"30m\", \"8h\")", s)
		return 0
	}
	if dur < 0 {
		d.errorf(key, "%q: must not be negative", s)
		return 0
	}
	return dur
}

func (d *tomlDecoder) strings(v any, key string) []string {
	list, ok := v.([]any)
	if !ok {
		d.errorf(key, "want an array of strings, got %s", tomlType(v))
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		out = append(out, d.str(e, fmt.Sprintf("%s[%d]", key, i)))
	}
	return out
}

// agentTable is [agent] as written, before the preset is applied.
type agentTable struct {
	loop.AgentConfig
	preset  string
	command []string
	args    []string
	api     apiKeys
	set     map[string]bool
}

// apiKeys are the [agent] keys of the built-in API agent.
type apiKeys struct {
	name            string // agent.api
	model           string
	baseURL         string
	keyEnv          string
	maxTurns        int64
	maxOutputTokens int64
	priceInput      float64
	priceOutput     float64
}

func (d *tomlDecoder) agentKey(a *agentTable, k string, v any) {
	key := "agent." + k
	a.set[k] = true
	switch k {
	case "preset":
		a.preset = d.str(v, key)
	case "command":
		a.command = d.strings(v, key)
	case "args":
		a.args = d.strings(v, key)
	case "prompt":
		switch s := d.str(v, key); s {
		case "stdin":
			a.PromptArg = false
		case "arg":
			a.PromptArg = true
		default:
			if _, ok := v.(string); ok {
				d.errorf(key, "%q: want \"stdin\" or \"arg\"", s)
			}
		}
	case "timeout":
		a.Timeout = d.duration(v, key)
	case "idle_timeout":
		a.IdleTimeout = d.duration(v, key)
	case "retry_backoff":
		errs := len(d.errs)
		if a.RetryBackoff = d.duration(v, key); a.RetryBackoff == 0 && len(d.errs) == errs {
			// Doubling nothing is nothing: a rate-limited service would
			// be asked again at once, without end.
			d.errorf(key, "%q: must be more than 0: it is the first wait after a rate limit or a server error, doubled each time", v)
		} else if a.RetryBackoff > agent.MaxWait {
			// No agent's limit lasts longer (see agent.MaxWait), and
			// the loop would cut the wait to it.
			d.errorf(key, "%q: must be at most %s (31 days), the longest wait for a rate limit", v, agent.MaxWait)
		}
	case "max_retries":
		a.MaxRetries = int(d.count(v, key))
	case "env":
		d.table(v, key, func(name string, val any) {
			if name == "" || strings.ContainsAny(name, "=\x00") {
				// The agent would see another variable than the one named.
				d.errorf(key, "%q: not a variable's name (empty, or with = or NUL in it)", name)
				return
			}
			if slices.Contains(loop.IterationVars, name) {
				// Told, not overridden in silence: a wrapper that
				// reads it would get ralph's value and never this.
				d.errorf(key, "%s is ralph's to set: the agent gets ralph's value for each iteration, never this one; remove it", name)
				return
			}
			a.Env = append(a.Env, name+"="+d.str(val, key+"."+name))
		})
	case "api":
		a.api.name = d.str(v, key)
		if _, ok := v.(string); ok && a.api.name != api.Anthropic && a.api.name != api.OpenAI {
			d.errorf(key, "%q: unknown API (known: %s, %s)", a.api.name, api.Anthropic, api.OpenAI)
		}
	case "model":
		a.api.model = d.str(v, key)
		if _, ok := v.(string); ok && strings.TrimSpace(a.api.model) == "" {
			d.errorf(key, "empty: want the model's name")
		}
	case "base_url":
		a.api.baseURL = d.str(v, key)
	case "api_key_env":
		a.api.keyEnv = d.str(v, key)
	case "max_turns", "max_output_tokens":
		n := d.positive(v, key)
		if k == "max_turns" {
			a.api.maxTurns = n
		} else {
			a.api.maxOutputTokens = n
		}
	case "price_input_per_mtok":
		a.api.priceInput = d.number(v, key)
	case "price_output_per_mtok":
		a.api.priceOutput = d.number(v, key)
	default:
		d.unknown(key)
	}
}

// apiOnlyKeys are the [agent] keys that mean something only with agent.api.
var apiOnlyKeys = []string{"model", "base_url", "api_key_env", "max_turns", "max_output_tokens", "price_input_per_mtok", "price_output_per_mtok"}

// envNameRE is what a variable name may look like.
var envNameRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// apiAgent resolves agent.api into the command that runs the built-in API
// agent: ralph itself, as `ralph api-agent` with the settings as flags. The
// key stays in the environment: only its variable's name is passed.
func (d *tomlDecoder) apiAgent(a *agentTable, cfg *loop.AgentConfig) {
	k := a.api
	if k.name != api.Anthropic && k.name != api.OpenAI {
		return // already reported
	}
	for _, other := range []string{"preset", "command", "args"} {
		if a.set[other] {
			d.errorf("agent."+other, "cannot be used with agent.api: the API agent is built into ralph (remove one of the two)")
		}
	}
	if a.set["prompt"] && a.PromptArg {
		d.errorf("agent.prompt", "\"arg\" cannot be used with agent.api: the API agent reads its prompt on stdin")
	}
	if !a.set["model"] {
		d.errorf("agent.model", "missing: agent.api needs the model's name, e.g. model = %q", exampleModel(k.name))
	}
	if a.set["base_url"] {
		u, err := url.Parse(k.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.errorf("agent.base_url", "%q: want an http or https URL such as %q", k.baseURL, api.DefaultBaseURL(k.name))
		}
	}
	keyEnv := api.DefaultKeyEnv(k.name)
	if a.set["api_key_env"] {
		keyEnv = k.keyEnv
		if !envNameRE().MatchString(keyEnv) {
			d.errorf("agent.api_key_env", "%q: want the name of an environment variable, such as %q (the key itself stays out of this file)", keyEnv, api.DefaultKeyEnv(k.name))
		}
	}
	maxTurns, maxTokens := int64(api.DefaultMaxTurns), int64(api.DefaultMaxOutputTokens)
	if k.maxTurns > 0 {
		maxTurns = k.maxTurns
	}
	if k.maxOutputTokens > 0 {
		maxTokens = k.maxOutputTokens
	}
	self, err := selfPath()
	if err != nil {
		d.errorf("agent.api", "cannot find ralph's own program, which runs the API agent: %v", err)
		return
	}
	argv := []string{self, "api-agent",
		"--api", k.name,
		"--model", k.model,
		"--api-key-env", keyEnv,
		"--max-turns", strconv.FormatInt(maxTurns, 10),
		"--max-output-tokens", strconv.FormatInt(maxTokens, 10),
	}
	if a.set["base_url"] {
		argv = append(argv, "--base-url", k.baseURL)
	}
	if a.set["price_input_per_mtok"] {
		argv = append(argv, "--price-input-per-mtok", strconv.FormatFloat(k.priceInput, 'g', -1, 64))
	}
	if a.set["price_output_per_mtok"] {
		argv = append(argv, "--price-output-per-mtok", strconv.FormatFloat(k.priceOutput, 'g', -1, 64))
	}
	cfg.Argv = argv
	cfg.Format = agent.ClaudeStreamJSON
	// The providers' own APIs say tokens, not what they cost; an
	// OpenAI-compatible one elsewhere may (OpenRouter's does).
	if k.priceInput <= 0 && k.priceOutput <= 0 && !(k.name == api.OpenAI && a.set["base_url"]) {
		cfg.NoCost = "the built-in API agent knows no cost without agent.price_input_per_mtok and agent.price_output_per_mtok"
	}
	cfg.PromptArg = false
	cfg.SecretEnv = []string{keyEnv}
	baseURL := api.DefaultBaseURL(k.name)
	if a.set["base_url"] {
		baseURL = k.baseURL
	}
	needsKey := api.NeedsKey(k.name, baseURL)
	cfg.KeyEnv = keyEnv
	cfg.KeyCheck = func(key string) string {
		if key == "" {
			if needsKey {
				return api.KeyMissing(k.name, keyEnv)
			}
			return ""
		}
		return api.KeyUnusable(key, keyEnv)
	}
}

// exampleModel names a model of the API for messages.
func exampleModel(name string) string {
	if name == api.Anthropic {
		return "claude-sonnet-4-5"
	}
	return "gpt-4.1"
}

// agent resolves the preset and the command into one argv and applies the
// defaults.
func (d *tomlDecoder) agent(a *agentTable) loop.AgentConfig {
	cfg := a.AgentConfig
	if !a.set["timeout"] {
		cfg.Timeout = loop.DefaultTimeout
	}
	if !a.set["idle_timeout"] {
		cfg.IdleTimeout = loop.DefaultIdleTimeout
	}
	if !a.set["retry_backoff"] {
		cfg.RetryBackoff = loop.DefaultRetryBackoff
	}
	if !a.set["max_retries"] {
		cfg.MaxRetries = loop.DefaultMaxRetries
	}
	if a.set["api"] {
		d.apiAgent(a, &cfg)
		return cfg
	}
	for _, k := range apiOnlyKeys {
		if a.set[k] {
			d.errorf("agent."+k, "only for the built-in API agent: set agent.api (\"anthropic\" or \"openai\") too, or remove it")
		}
	}
	switch {
	case d.wrong("agent") || d.wrong("agent.command") || d.wrong("agent.preset"):
		// A type was wrong, which is already reported.
	case a.set["command"] && (len(a.command) == 0 || a.command[0] == ""):
		d.errorf("agent.command", "empty command: want the program and its arguments, e.g. [\"my-agent\", \"--yes\"]")
	case a.preset != "":
		p, ok := agent.LookupPreset(a.preset)
		if !ok {
			d.errorf("agent.preset", "%q: unknown preset (known: %s)", a.preset, strings.Join(agent.PresetNames(), ", "))
			break
		}
		program := p.Argv[:1]
		if a.set["command"] {
			// command replaces the preset's program and keeps its flags.
			program = a.command
		}
		cfg.Argv = slices.Concat(program, p.Argv[1:], a.args)
		cfg.Format = p.Format
		if !p.ReportsCost() {
			cfg.NoCost = "the " + p.Name + " preset's output says no cost"
		}
		cfg.PromptFlag = p.PromptFlag
		if !a.set["prompt"] {
			cfg.PromptArg = p.PromptArg
		}
	case a.set["command"]:
		cfg.Argv = slices.Concat(a.command, a.args)
		cfg.NoCost = "a plain command's output says no cost"
	default:
		d.errorf("agent", "no agent: set agent.preset (e.g. \"claude\") or agent.command")
	}
	return cfg
}

func (d *tomlDecoder) loopKey(l *loop.Limits, k string, v any) {
	key := "loop." + k
	switch k {
	case "max_iterations":
		l.MaxIterations = int(d.count(v, key))
	case "max_attempts":
		l.MaxAttempts = int(d.positive(v, key))
	case "max_duration":
		l.MaxDuration = d.duration(v, key)
	case "max_cost_usd":
		l.MaxCostUSD = d.number(v, key)
	case "max_tokens":
		l.MaxTokens = d.count(v, key)
	case "stall_after":
		l.StallAfter = int(d.count(v, key))
	default:
		d.unknown(key)
	}
}

func (d *tomlDecoder) checks(v any) []checks.Check {
	list, ok := v.([]map[string]any)
	if arr, isArray := v.([]any); isArray {
		// checks = [{name = "test", run = "…"}] is the same list in TOML,
		// inline, and checks = [] an empty one.
		list, ok = make([]map[string]any, len(arr)), true
		for i, e := range arr {
			if list[i], ok = e.(map[string]any); !ok {
				d.errorf(fmt.Sprintf("checks[%d]", i), "want a table, got %s", tomlType(e))
				return nil
			}
		}
	}
	if !ok {
		d.errorf("checks", "want [[checks]] tables, got %s", tomlType(v))
		return nil
	}
	var out []checks.Check
	names := map[string]int{}
	for i, t := range list {
		key := fmt.Sprintf("checks[%d]", i)
		c := checks.Check{Timeout: loop.DefaultCheckTimeout, Required: true}
		d.table(t, key, func(k string, v any) {
			switch k {
			case "name":
				c.Name = d.str(v, key+".name")
			case "run":
				c.Run = d.str(v, key+".run")
			case "timeout":
				c.Timeout = d.duration(v, key+".timeout")
			case "required":
				c.Required = d.boolean(v, key+".required")
			case "baseline":
				c.Baseline = d.boolean(v, key+".baseline")
			case "after":
				c.After = d.strings(v, key+".after")
			default:
				d.unknown(key + "." + k)
			}
		})
		if strings.TrimSpace(c.Run) == "" && !d.wrong(key+".run") {
			d.errorf(key+".run", "empty command: want a shell command such as \"go test ./...\"")
		}
		named := c.Name != "" || d.wrong(key+".name")
		if c.Name == "" {
			c.Name = fmt.Sprintf("check%d", i+1)
		}
		if r, ok := prd.ControlIn(c.Name); ok {
			// The prompt and the ledger give a check's name a line; a
			// line break in it would start another.
			d.errorf(key+".name", "%q: %U is a control character: a check's name is a line of plain text", c.Name, r)
		}
		first, dup := names[c.Name]
		switch {
		case dup && named:
			d.errorf(key+".name", "%q: duplicate name (first at checks[%d])", c.Name, first)
		case dup:
			d.errorf(key, "no name, and %q, the name it would get, is checks[%d]'s: give it a name", c.Name, first)
		default:
			names[c.Name] = i
		}
		if loop.IsStoryCheckName(c.Name) {
			// A harness check of such a name would share a story's own
			// check's test count.
			d.errorf(key+".name", "%q: a name of this shape (ID#3fa2b1) is kept for stories' own checks", c.Name)
		}
		out = append(out, c)
	}
	d.after(out, names)
	return out
}

// after reports the names in the checks' after that name no check, or the
// check itself, and the checks that wait for each other in a circle: none
// of them could ever start. names gives each name's first check.
func (d *tomlDecoder) after(cs []checks.Check, names map[string]int) {
	next := make([][]int, len(cs))
	for i, c := range cs {
		for k, name := range c.After {
			key := fmt.Sprintf("checks[%d].after[%d]", i, k)
			j, ok := names[name]
			switch {
			case d.wrong(key):
			case !ok:
				d.errorf(fmt.Sprintf("checks[%d].after", i), "%q: no check of that name", name)
			case j == i:
				d.errorf(fmt.Sprintf("checks[%d].after", i), "%q: a check cannot wait for itself", name)
			default:
				next[i] = append(next[i], j)
			}
		}
	}
	// A walk from each check in turn finds a circle when it comes back to
	// a check on its path; a check whose walk ended leads to none.
	const (
		unseen = iota
		onPath
		walked
	)
	state := make([]int, len(cs))
	var path []int
	var walk func(i int)
	walk = func(i int) {
		state[i] = onPath
		path = append(path, i)
		for _, j := range next[i] {
			switch state[j] {
			case unseen:
				walk(j)
			case onPath:
				circle := path[slices.Index(path, j):]
				shown := make([]string, 0, len(circle)+1)
				for _, k := range circle {
					shown = append(shown, strconv.Quote(cs[k].Name))
				}
				shown = append(shown, strconv.Quote(cs[j].Name))
				d.errorf(fmt.Sprintf("checks[%d].after", j), "%s: the checks wait for each other in a circle: none of them could start", strings.Join(shown, " → "))
			}
		}
		path = path[:len(path)-1]
		state[i] = walked
	}
	for i := range cs {
		if state[i] == unseen {
			walk(i)
		}
	}
}

func (d *tomlDecoder) guardKey(g *loop.Guard, k string, v any) {
	key := "guard." + k
	var globs []string
	switch k {
	case "protect", "tests":
		globs = d.strings(v, key)
		for i, pattern := range globs {
			at := fmt.Sprintf("%s[%d]", key, i)
			if err := glob.Valid(pattern); err != nil && !d.wrong(at) {
				d.errorf(at, "%q: %v", pattern, err)
			}
		}
	default:
		d.unknown(key)
		return
	}
	if k == "protect" {
		g.Protect = globs
	} else {
		g.Tests = globs
	}
}

// tomlType names a decoded TOML value's type the way the TOML spec does.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	case time.Time:
		return "a date-time"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// invalidUTF8 is the offset of the first byte of text that is not valid
// UTF-8, or -1.
func invalidUTF8(text []byte) int {
	if utf8.Valid(text) {
		return -1
	}
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}
