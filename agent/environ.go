package agent

import "strings"

// nestedVars are set by coding agents for the processes they run. An agent
// that finds them thinks it was started inside another agent's session:
// Claude Code refuses to start ("cannot be launched inside another Claude Code
// session"), or attaches to the wrong session or IDE. ralph started from a
// shell inside such a session would pass them on.
//
// Codex's sandbox markers (CODEX_SANDBOX, CODEX_SANDBOX_NETWORK_DISABLED) are
// kept on purpose: they describe restrictions that still hold for everything
// ralph starts, and tests read them to skip what cannot work there.
var nestedVars = []string{
	// Claude Code: the nesting guard, how the session was started, and the
	// port of the IDE integration it connected to.
	"CLAUDECODE",
	"CLAUDE_CODE_ENTRYPOINT",
	"CLAUDE_CODE_SSE_PORT",
	// Codex: the thread (session) its commands belong to, and the originator
	// it reports to the API.
	"CODEX_THREAD_ID",
	"CODEX_INTERNAL_ORIGINATOR_OVERRIDE",
	// Gemini CLI: set in the shell commands it runs.
	"GEMINI_CLI",
}

// Environ returns base (usually os.Environ()) with extra "K=V" pairs added,
// overriding same-named keys, and the variables removed that tell an agent it
// runs inside another agent's session, so that ralph started from inside, say,
// Claude Code still starts a normal agent. An extra pair may set one of those
// variables again on purpose. Later pairs win over earlier ones; the order of
// the remaining base entries is kept.
func Environ(base []string, extra ...string) []string {
	drop := make(map[string]bool, len(nestedVars)+len(extra))
	for _, k := range nestedVars {
		drop[k] = true
	}
	// The last assignment of a key in extra wins.
	last := make(map[string]int, len(extra))
	for i, kv := range extra {
		k := envKey(kv)
		drop[k] = true
		last[k] = i
	}
	env := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		if !drop[envKey(kv)] {
			env = append(env, kv)
		}
	}
	for i, kv := range extra {
		if last[envKey(kv)] == i {
			env = append(env, kv)
		}
	}
	return env
}

// envKey returns the name in a "K=V" pair (all of it when there is no '=').
func envKey(kv string) string {
	if i := strings.IndexByte(kv, '='); i >= 0 {
		return kv[:i]
	}
	return kv
}
