package agent

import (
	"sort"
	"strings"
)

// Preset is how to run one agent CLI headless and unattended.
type Preset struct {
	Name string
	// Argv is the program and its flags; agent.args follow them, and the
	// prompt follows those when PromptArg is set.
	Argv      []string
	PromptArg bool
	// PromptFlag goes just before the prompt, after agent.args, for CLIs
	// whose prompt is a flag's value; one that ends in "=" is joined to
	// the prompt in one argument (see PromptArgs).
	PromptFlag string
	Format     Format
	// NoCost says that the CLI's output says no cost, though its format
	// could: cursor's result event has none.
	NoCost bool
}

// ReportsCost reports whether the CLI's output says what a run cost.
func (p Preset) ReportsCost() bool {
	return p.Format.ReportsCost() && !p.NoCost
}

// presets are the agent CLIs ralph knows. Each one's flags make it run
// without asking anything, and print a stream ralph can read.
var presets = map[string]Preset{
	"claude": {
		Argv:   []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"},
		Format: ClaudeStreamJSON,
	},
	"codex": {
		// codex reads an open stdin to its end: the prompt goes as an
		// argument, and stdin is /dev/null. After "--", so that a prompt
		// that starts with "-" is no flag.
		Argv:       []string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"},
		PromptArg:  true,
		PromptFlag: "--",
		Format:     CodexJSON,
	},
	"gemini": {
		// --prompt runs gemini headless. Its value is joined to the flag,
		// so that gemini cannot take a prompt that starts with "-" (a
		// template opening with a list, say) for flags of its own, as it
		// does a positional query or a separate value. In a folder not
		// trusted yet, gemini turns --yolo back into asking: --skip-trust
		// trusts it for the run.
		Argv:       []string{"gemini", "--yolo", "--skip-trust", "-o", "stream-json"},
		PromptArg:  true,
		PromptFlag: "--prompt=",
		Format:     GeminiStreamJSON,
	},
	"opencode": {
		// --auto approves every permission that is not explicitly denied
		// (without it, run rejects them). The prompt goes on stdin: opencode
		// quotes an argument that holds spaces before the model sees it.
		Argv:   []string{"opencode", "run", "--format", "json", "--auto"},
		Format: OpenCodeJSON,
	},
	// The three below are written from their documentation: they need an
	// account, and cannot be run where ralph is tested.
	"amp": {
		// Execute mode reads the prompt from stdin; --stream-json is
		// Claude Code's stream-json.
		Argv:   []string{"amp", "-x", "--stream-json", "--dangerously-allow-all"},
		Format: ClaudeStreamJSON,
	},
	"cursor": {
		// Print mode takes the prompt as its argument; its stream-json
		// ends in a result event like Claude Code's.
		Argv:      []string{"cursor-agent", "-p", "--output-format", "stream-json", "--force"},
		PromptArg: true,
		Format:    ClaudeStreamJSON,
		NoCost:    true,
	},
	"copilot": {
		// -p takes the prompt as its value; -s prints the response alone.
		Argv:       []string{"copilot", "-s", "--allow-all"},
		PromptArg:  true,
		PromptFlag: "-p",
		Format:     Text,
	},
}

// aliases are other names of presets: cursor's program is cursor-agent,
// and that is the name the agent goes by as often as cursor.
var aliases = map[string]string{
	"cursor-agent": "cursor",
}

// PromptArgs returns the arguments that pass prompt after flag, a preset's
// PromptFlag: one argument when flag ends in "=", two otherwise, and the
// prompt alone when there is no flag.
func PromptArgs(flag, prompt string) []string {
	switch {
	case flag == "":
		return []string{prompt}
	case strings.HasSuffix(flag, "="):
		return []string{flag + prompt}
	}
	return []string{flag, prompt}
}

// LookupPreset returns the preset called name, or of which name is
// another name (see aliases): Name is then the preset's own.
func LookupPreset(name string) (Preset, bool) {
	if own, ok := aliases[name]; ok {
		name = own
	}
	p, ok := presets[name]
	if ok {
		p.Name = name
		p.Argv = append([]string(nil), p.Argv...)
	}
	return p, ok
}

// PresetNames lists the known presets in order, each by its own name only.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
