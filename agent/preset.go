package agent

import "sort"

// Preset is how to run one agent CLI headless and unattended.
type Preset struct {
	Name string
	// Argv is the program and its flags; agent.args follow them, and the
	// prompt follows those when PromptArg is set.
	Argv      []string
	PromptArg bool
	Format    Format
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
		// argument, and stdin is /dev/null.
		Argv:      []string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"},
		PromptArg: true,
		Format:    CodexJSON,
	},
	"gemini": {
		Argv:      []string{"gemini", "--yolo", "-o", "stream-json", "-p"},
		PromptArg: true,
		Format:    GeminiStreamJSON,
	},
	"opencode": {
		Argv:      []string{"opencode", "run", "--format", "json"},
		PromptArg: true,
		Format:    OpenCodeJSON,
	},
}

// LookupPreset returns the preset called name.
func LookupPreset(name string) (Preset, bool) {
	p, ok := presets[name]
	if ok {
		p.Name = name
		p.Argv = append([]string(nil), p.Argv...)
	}
	return p, ok
}

// PresetNames lists the known presets in order.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
