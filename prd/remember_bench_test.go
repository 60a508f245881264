package prd

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ralph-harness/ralph/bench/fixture"
)

// BenchmarkRecord is the loop's work on prd.json between two of its reads,
// without the disk: a status recorded (Marshal, and what Save tells Parse)
// and the saved text read back.
func BenchmarkRecord(b *testing.B) {
	for _, n := range []int{200, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			forget()
			f, err := Parse(fixture.PRD(n, n/2), "prd.json")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				f.Next().Attempts++
				text, l := f.marshal()
				remember(text, f, l)
				if f, err = Parse(bytes.Join(text, nil), "prd.json"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
