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
		{"cargo", "running 3 tests\ntest result: ok. 3 passed; 0 failed; 1 ignored; 0 measured\n", 3},
		{"cargo, several binaries", "test result: ok. 3 passed; 0 failed\ntest result: ok. 1 passed; 0 failed\n   Doc-tests x\ntest result: ok. 2 passed; 0 failed\n", 6},
		{"jest", "Tests:       1 failed, 2 passed, 3 total\n", 3},
		{"vitest", " Test Files  1 passed (1)\n      Tests  3 passed (3)\n   Start at  10:00:00\n", 3},
		{"vitest, a failure", "      Tests  1 failed | 2 passed (3)\n", 3},
		{"pytest -q", "...F\n1 failed, 3 passed in 0.02s\n", 4},
		{"pytest -q, warnings", "....\n4 passed, 1 warning in 0.10s\n", 4},
		{"not a runner's time", "build ok\n2 passed the linter in 3s flat\n", -1},
		{"not a runner", "build ok\n2 passed the linter\n", -1},
		{"go without -v", "ok  \tpkg\t0.01s\n", -1},
		{"not go's verdicts", "--- a/main.go\n+++ b/main.go\n--- PASSED: the linter\nlog: --- PASS: TestA (0.00s)\n", -1},
		{"go -json, paused and continued", `{"Action":"pause","Package":"p","Test":"TestA"}` + "\n" + `{"Action":"cont","Package":"p","Test":"TestA"}` + "\n" + `{"Action":"pass","Package":"p","Test":"TestA"}` + "\n", 1},
		{"go -json, the test named first", `{"Test":"TestA","Action":"fail"}` + "\n", 1},

		// Skipped tests did not run: they do not count, and a runner that
		// skipped every test reports none run.
		{"go -v, skips", goSkips, 3},
		{"go -v, all skipped", "=== RUN   TestA\n    a_test.go:9: needs a database\n--- SKIP: TestA (0.00s)\nPASS\nok  \texample.com/shop\t0.01s\n", 0},
		{"go -json, skips", goJSONSkips, 1},
		{"go -json, no test files", `{"Time":"2026-01-02T10:00:00Z","Action":"output","Package":"example.com/shop/cmd","Output":"?   \texample.com/shop/cmd\t[no test files]\n"}` + "\n" + `{"Time":"2026-01-02T10:00:00Z","Action":"skip","Package":"example.com/shop/cmd","Elapsed":0}` + "\n", -1},
		{"pytest, skips", pytestSkips, 5},
		{"pytest, all skipped", "collected 4 items\n\ntests/test_cart.py ssss                                    [100%]\n\n============================== 4 skipped in 0.01s ==============================\n", 0},
		{"pytest, errors", "==================== 1 passed, 1 skipped, 2 errors in 0.10s =====================\n", 3},
		{"pytest -q, skips", "..ss\n2 passed, 2 skipped in 0.02s\n", 2},
		{"pytest -q, all skipped", "ssss\n4 skipped in 0.01s\n", 0},
		{"cargo, ignored", cargoIgnored, 3},
		{"cargo, all ignored", "running 2 tests\ntest tests::slow ... ignored\ntest tests::slower ... ignored\n\ntest result: ok. 0 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.00s\n", 0},
		{"jest, skipped and todo", "Test Suites: 1 failed, 1 passed, 2 total\nTests:       1 failed, 2 skipped, 1 todo, 3 passed, 7 total\nSnapshots:   0 total\nTime:        1.234 s\nRan all test suites.\n", 4},
		{"jest, all skipped", "Test Suites: 1 skipped, 0 of 1 total\nTests:       3 skipped, 3 total\nSnapshots:   0 total\n", 0},
		{"vitest, skips", " ✓ src/cart.test.ts (5 tests | 2 skipped) 3ms\n\n Test Files  1 passed (1)\n      Tests  3 passed | 2 skipped (5)\n   Start at  10:00:00\n", 3},
		{"vitest, a failure, skips and todo", "      Tests  1 failed | 2 passed | 1 skipped | 1 todo (5)\n", 3},
		{"vitest, all skipped", " Test Files  1 skipped (1)\n      Tests  4 skipped (4)\n", 0},
		{"vitest, all todo", "      Tests  2 todo (2)\n", 0},

		// Coloured, as runners print when FORCE_COLOR is set or their
		// settings say --color, pipe or not.
		{"jest, coloured", "\x1b[1mTests:       \x1b[22m\x1b[1m\x1b[31m1 failed\x1b[39m\x1b[22m, \x1b[1m\x1b[33m1 skipped\x1b[39m\x1b[22m, \x1b[1m\x1b[32m2 passed\x1b[39m\x1b[22m, 4 total\n", 3},
		{"vitest, coloured", "\x1b[2m Test Files \x1b[22m \x1b[1m\x1b[32m1 passed\x1b[39m\x1b[22m\x1b[90m (1)\x1b[39m\n\x1b[2m      Tests \x1b[22m \x1b[1m\x1b[32m3 passed\x1b[39m\x1b[22m\x1b[2m | \x1b[22m\x1b[33m1 skipped\x1b[39m\x1b[90m (4)\x1b[39m\n", 3},
		{"pytest, coloured", "\x1b[32m============================== \x1b[32m\x1b[1m4 passed\x1b[0m, \x1b[33m1 skipped\x1b[0m\x1b[32m in 0.02s\x1b[0m\x1b[32m ===============================\x1b[0m\n", 4},
		{"cargo, coloured", "test result: \x1b[32mok\x1b[0m. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n", 3},
		{"go -v, coloured", "\x1b[32m--- PASS: TestA (0.00s)\x1b[0m\n\x1b[31m--- FAIL: TestB (0.00s)\x1b[0m\n", 2},
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

// Realistic outputs with skipped tests, too long to write in the table.
const (
	goSkips = `=== RUN   TestA
--- PASS: TestA (0.00s)
=== RUN   TestB
    b_test.go:12: flaky on CI
--- SKIP: TestB (0.00s)
=== RUN   TestC
=== RUN   TestC/sub
    c_test.go:20: not on linux
=== RUN   TestC/other
--- PASS: TestC (0.00s)
    --- SKIP: TestC/sub (0.00s)
    --- PASS: TestC/other (0.00s)
PASS
ok  	example.com/shop	0.01s
`
	goJSONSkips = `{"Time":"2026-01-02T10:00:00Z","Action":"start","Package":"example.com/shop"}
{"Time":"2026-01-02T10:00:00Z","Action":"run","Package":"example.com/shop","Test":"TestA"}
{"Time":"2026-01-02T10:00:00Z","Action":"output","Package":"example.com/shop","Test":"TestA","Output":"=== RUN   TestA
"}
{"Time":"2026-01-02T10:00:00Z","Action":"output","Package":"example.com/shop","Test":"TestA","Output":"--- PASS: TestA (0.00s)
"}
{"Time":"2026-01-02T10:00:00Z","Action":"pass","Package":"example.com/shop","Test":"TestA","Elapsed":0}
{"Time":"2026-01-02T10:00:00Z","Action":"run","Package":"example.com/shop","Test":"TestB"}
{"Time":"2026-01-02T10:00:00Z","Action":"output","Package":"example.com/shop","Test":"TestB","Output":"=== RUN   TestB
"}
{"Time":"2026-01-02T10:00:00Z","Action":"output","Package":"example.com/shop","Test":"TestB","Output":"    b_test.go:12: flaky on CI
"}
{"Time":"2026-01-02T10:00:00Z","Action":"output","Package":"example.com/shop","Test":"TestB","Output":"--- SKIP: TestB (0.00s)
"}
{"Time":"2026-01-02T10:00:00Z","Action":"skip","Package":"example.com/shop","Test":"TestB","Elapsed":0}
{"Time":"2026-01-02T10:00:00Z","Action":"output","Package":"example.com/shop","Output":"PASS
"}
{"Time":"2026-01-02T10:00:00Z","Action":"pass","Package":"example.com/shop","Elapsed":0.01}
`
	pytestSkips = `============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /home/u/shop
collected 6 items

tests/test_cart.py ..s.Fx                                                [100%]

=================================== FAILURES ===================================
__________________________________ test_total __________________________________

    def test_total():
>       assert total([1, 2]) == 4
E       assert 3 == 4

tests/test_cart.py:14: AssertionError
=========================== short test summary info ============================
SKIPPED [1] tests/test_cart.py:9: needs a database
FAILED tests/test_cart.py::test_total - assert 3 == 4
=============== 1 failed, 3 passed, 1 skipped, 1 xfailed in 0.12s ===============
`
	cargoIgnored = `running 4 tests
test tests::adds ... ok
test tests::slow ... ignored
test tests::subtracts ... ok
test tests::divides ... FAILED

failures:

---- tests::divides stdout ----
thread 'tests::divides' panicked at src/lib.rs:30:9:
attempt to divide by zero

failures:
    tests::divides

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests shop

running 1 test
test src/lib.rs - add (line 3) ... ignored

test result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s
`
)

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

// BenchmarkTestCounterGoJSON counts through go test -json's output, where
// every line has the text that sends it to a pattern.
func BenchmarkTestCounterGoJSON(b *testing.B) {
	chunk := []byte(strings.Repeat(goJSONSkips, 64))
	b.SetBytes(int64(len(chunk)))
	c := newTestCounter()
	for b.Loop() {
		c.Write(chunk)
	}
	if c.count() <= 0 {
		b.Fatal("counted no test in go test -json's output")
	}
}
