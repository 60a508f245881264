package templates

import (
	"strings"
	"testing"
)

// BenchmarkRender renders the default prompt with every part filled to a
// usual size.
func BenchmarkRender(b *testing.B) {
	p := full()
	p.Story.Description = strings.Repeat("As a shopper I want to pay by card. ", 20)
	p.Head = strings.Repeat("- a pattern the codebase follows\n", 40)
	p.Failures[0].Output = strings.Repeat("--- FAIL: TestCart (0.00s)\n", 40)
	p.Recent = []string{p.Previous, p.Previous, p.Previous}
	t := Default()
	var size int
	for b.Loop() {
		out, err := t.Render(p)
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.SetBytes(int64(size))
}
