package prd

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ralph-harness/ralph/bench/fixture"
)

// BenchmarkRecord is the loop's work on prd.json between two of its reads,
// without the disk: a status recorded (Marshal, and what Save tells Parse)
// and the saved text read back, its stories copied anew (Parse) or taken
// over from the last read where the save left them as they were
// (ParseReusing, as the loop reads it).
func BenchmarkRecord(b *testing.B) {
	for _, reuse := range []bool{false, true} {
		for _, n := range []int{200, 10_000} {
			name := fmt.Sprint(n)
			if reuse {
				name += "/reusing"
			}
			b.Run(name, func(b *testing.B) {
				forget()
				f, err := Parse(fixture.PRD(n, n/2), "prd.json")
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					f.Next().Attempts++
					text, l := f.marshal()
					remember(text, f, l)
					data := bytes.Join(text, nil)
					if reuse {
						f, err = ParseReusing(data, "prd.json", f)
					} else {
						f, err = Parse(data, "prd.json")
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
