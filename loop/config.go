package loop

import (
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/checks"
	"github.com/ralph-harness/ralph/internal/proc"
)

// Config is a checked harness.toml: everything the loop needs to know about
// how to run, with defaults applied. Package main builds it; the loop never
// reads TOML itself.
type Config struct {
	Agent  AgentConfig
	Checks []checks.Check
	Limits Limits
	Guard  Guard
	// Commit is whether to commit after every iteration; it applies only
	// inside a git work tree. CommitAsked is whether harness.toml says so
	// itself (git.commit = true) rather than by default: outside a work
	// tree, the loop warns then that it makes no commits.
	Commit, CommitAsked bool
	// PromptTemplate is the text of a prompt template that replaces the
	// embedded default; empty means the default.
	PromptTemplate string
	// PromptTemplateName names PromptTemplate's file as harness.toml does
	// (see TemplatePath).
	PromptTemplateName string
}

// TemplatePath is where the prompt template's file is for the work
// directory dir: PromptTemplateName relative to dir, or as it is when
// absolute (one template for many projects); "" when there is none.
func (c *Config) TemplatePath(dir string) string {
	switch name := c.PromptTemplateName; {
	case name == "":
		return ""
	case filepath.IsAbs(name):
		return name
	default:
		return filepath.Join(dir, name)
	}
}

// AgentConfig says how to start the agent.
type AgentConfig struct {
	Argv       []string
	PromptArg  bool
	PromptFlag string // with PromptArg: the flag that goes before the prompt
	Format     agent.Format
	// NoCost says why the agent's output says no cost, when it does not
	// (loop.max_cost_usd then never stops the run); "" when it may.
	NoCost      string
	Timeout     time.Duration
	IdleTimeout time.Duration
	Env         []string // "K=V" pairs added to ralph's own environment
	// RetryBackoff is the first wait after a rate limit that names no reset
	// time, or after a transient error; it doubles each time in a row.
	RetryBackoff time.Duration
	// MaxRetries is how many transient errors in a row the loop retries
	// before it stops.
	MaxRetries int
	// SecretEnv names variables whose values are secrets whatever their
	// names (agent.api_key_env): they are redacted as the secret-named ones.
	SecretEnv []string
	// KeyEnv names the variable that holds the agent's key (the API
	// agent's), and KeyCheck says what keeps a key, "" when it is not
	// set, from being used: the loop does not start while it says
	// anything. It says nothing of a key that will do.
	KeyEnv   string
	KeyCheck func(key string) string
}

// IterationVars are the variables ralph gives the agent of every iteration,
// each with the iteration's own value (see runAgent). agent.env may not set
// them: ralph's value would take the place of its, unseen.
var IterationVars = []string{"RALPH_TASK_ID", "RALPH_ITERATION", "RALPH_ATTEMPT", proc.DirVar}

// KeyError says what keeps the agent's key, in the environment the agent
// would get (environ, with the agent's own env), from being used (see
// KeyCheck), or is nil.
func (a AgentConfig) KeyError(environ []string) error {
	if a.KeyEnv == "" || a.KeyCheck == nil {
		return nil
	}
	key := ""
	for _, kv := range agent.Environ(environ, a.Env...) {
		if k, v, _ := strings.Cut(kv, "="); k == a.KeyEnv {
			key = v
		}
	}
	if msg := a.KeyCheck(key); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// Limits are the run's budgets. A zero value means no limit, except
// MaxAttempts, which is always set.
type Limits struct {
	MaxIterations int
	MaxAttempts   int
	MaxDuration   time.Duration
	MaxCostUSD    float64
	MaxTokens     int64
	// StallAfter is how many identical failures in a row fail a story
	// as stalled; 0: never.
	StallAfter int
}

// Defaults for the keys a harness.toml may leave out.
const (
	DefaultTimeout      = 30 * time.Minute
	DefaultIdleTimeout  = 10 * time.Minute
	DefaultMaxAttempts  = 5
	DefaultCheckTimeout = 10 * time.Minute
	DefaultRetryBackoff = 30 * time.Second
	DefaultMaxRetries   = 3
	// maxBackoff caps the exponential backoff.
	maxBackoff = 30 * time.Minute
)
