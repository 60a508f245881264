package agent

import "sort"

// Preset is how to run one agent CLI headless and unattended.
type Preset struct {
	Name string
	// Argv is the program and its flags; agent.args follow them.
	Argv      []string
	PromptArg bool
	Format    Format
}

var presets = map[string]Preset{
	"claude": {
		Name:   "claude",
		Argv:   []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"},
		Format: ClaudeStreamJSON,
	},
}

// LookupPreset returns the preset called name.
func LookupPreset(name string) (Preset, bool) {
	p, ok := presets[name]
	if ok {
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
