package checks

import (
	"strings"
	"testing"
)

func TestTestCounter(t *testing.T) {
	tests := []struct {
		name, out string
		want      int
	}{
		{"go -v", "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB (0.01s)\n    --- PASS: TestB/sub (0.00s)\nFAIL\n", 3},
		{"go -json", `{"Action":"run","Test":"TestA"}` + "\n" + `{"Time":"x","Action":"pass","Package":"p","Test":"TestA","Elapsed":0}` + "\n" + `{"Action":"pass","Package":"p","Elapsed":0.1}` + "\n", 1},
		{"pytest", "collected 5 items\n\ntests/test_a.py ....F\n==== 1 failed, 4 passed in 0.12s ====\n", 5},
		{"cargo", "running 3 tests\ntest result: ok. 3 passed; 0 failed; 1 ignored; 0 measured\n", 4},
		{"cargo, several binaries", "test result: ok. 3 passed; 0 failed\ntest result: ok. 1 passed; 0 failed\n   Doc-tests x\ntest result: ok. 2 passed; 0 failed\n", 6},
		{"jest", "Tests:       1 failed, 2 passed, 3 total\n", 3},
		{"vitest", " Test Files  1 passed (1)\n      Tests  3 passed (3)\n   Start at  10:00:00\n", 3},
		{"vitest, a failure", "      Tests  1 failed | 2 passed (3)\n", 3},
		{"pytest -q", "...F\n1 failed, 3 passed in 0.02s\n", 4},
		{"pytest -q, warnings", "....\n4 passed, 1 warning in 0.10s\n", 4},
		{"not a runner's time", "build ok\n2 passed the linter in 3s flat\n", -1},
		{"not a runner", "build ok\n2 passed the linter\n", -1},
		{"go without -v", "ok  \tpkg\t0.01s\n", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCounter()
			// Fed in small pieces, as a pipe delivers it.
			for _, piece := range strings.SplitAfter(tt.out, " ") {
				c.Write([]byte(piece))
			}
			if got := c.count(); got != tt.want {
				t.Errorf("count = %d, want %d", got, tt.want)
			}
		})
	}
}

// BenchmarkTestCounter counts through a build's output, lines that no
// runner's pattern matches: what most checks print.
func BenchmarkTestCounter(b *testing.B) {
	chunk := []byte(strings.Repeat("compiling module 42 of 97: internal/parser/lexer.go ok (0.13s)\n", 512))
	b.SetBytes(int64(len(chunk)))
	c := newTestCounter()
	for b.Loop() {
		c.Write(chunk)
	}
	if c.count() != -1 {
		b.Fatal("counted tests in a build's output")
	}
}
