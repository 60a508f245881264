package agent

import (
	"reflect"
	"slices"
	"testing"
)

// TestPresetAliases: another name of a preset runs it as its own name does,
// and is no preset of its own in the list of them.
func TestPresetAliases(t *testing.T) {
	for alias, own := range aliases {
		got, ok := LookupPreset(alias)
		if !ok {
			t.Errorf("LookupPreset(%q) found nothing, want preset %s", alias, own)
			continue
		}
		want, _ := LookupPreset(own)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("LookupPreset(%q) = %+v, want %+v", alias, got, want)
		}
		if slices.Contains(PresetNames(), alias) {
			t.Errorf("PresetNames() = %q, want %q left out", PresetNames(), alias)
		}
	}
	if p, ok := LookupPreset("cursor-agent"); !ok || p.Name != "cursor" {
		t.Errorf(`LookupPreset("cursor-agent") = %q, %v; want preset cursor`, p.Name, ok)
	}
}
