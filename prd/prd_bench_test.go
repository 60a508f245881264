package prd_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ralph-harness/ralph/bench/fixture"
	"github.com/ralph-harness/ralph/prd"
)

// The sizes every prd.json benchmark runs at: a usual file and a huge one.
var sizes = []int{100, 10_000}

// benchFile writes a fixture of n stories, half of them passing, and
// returns its path.
func benchFile(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "prd.json")
	if err := os.WriteFile(path, fixture.PRD(n, n/2), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkParse parses a file Parse has not seen last, as the first read
// of prd.json in an iteration does: two texts take turns.
func BenchmarkParse(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			data := [2][]byte{fixture.PRD(n, n/2), fixture.PRD(n, n/2)}
			data[1][len(data[1])-3] = ' ' // the same stories, another text
			b.SetBytes(int64(len(data[0])))
			i := 0
			for b.Loop() {
				i++
				if _, err := prd.Parse(data[i%2], "prd.json"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseAgain parses the text Parse saw last, as the later reads
// of prd.json in an iteration do.
func BenchmarkParseAgain(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			data := fixture.PRD(n, n/2)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := prd.Parse(data, "prd.json"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNext(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			f, err := prd.Parse(fixture.PRD(n, n/2), "prd.json")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if s := f.Next(); s == nil || s.ID != fixture.StoryID(n/2+1) {
					b.Fatalf("Next = %v, want %s", s, fixture.StoryID(n/2+1))
				}
			}
		})
	}
}

func BenchmarkMarshal(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			f, err := prd.Parse(fixture.PRD(n, n/2), "prd.json")
			if err != nil {
				b.Fatal(err)
			}
			s := f.Next()
			for b.Loop() {
				s.Attempts++
				if _, err := f.Marshal(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSave is Marshal plus the atomic, fsynced write.
func BenchmarkSave(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := benchFile(b, n)
			f, err := prd.Load(path)
			if err != nil {
				b.Fatal(err)
			}
			s := f.Next()
			for b.Loop() {
				s.Attempts++
				if err := f.Save(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUpdate is what the loop does to prd.json once an iteration is
// judged: lock, load, pick the story, change its status, save.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := benchFile(b, n)
			for b.Loop() {
				err := prd.Update(path, path, nil, func(f *prd.File) error {
					s := f.Next()
					st := s.Status()
					st.Attempts++
					s.SetStatus(st)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
