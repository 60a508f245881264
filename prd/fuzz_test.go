package prd

import (
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics, and that whatever it accepts,
// Marshal turns into a file that parses to the same stories and marshals to
// itself.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{canonical, messy, typeErrors, typeErrorsFixed, `{"userStories":[]}`, "{",
		`{"userStories":[{"id":"A","title":"t","answers":[{"question":"q","answer":"a","by":1},{}]}]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "prd.json")
		if err != nil {
			if file != nil {
				t.Fatalf("Parse returned a file with error %v", err)
			}
			return
		}
		out, err := file.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, err := Parse(out, "prd.json")
		if err != nil {
			t.Fatalf("Parse of Marshal's output: %v\n%s", err, out)
		}
		if len(again.Stories) != len(file.Stories) {
			t.Fatalf("got %d stories after a round trip, want %d", len(again.Stories), len(file.Stories))
		}
		for i, s := range file.Stories {
			if got, want := exported(again.Stories[i]), exported(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("story %d after a round trip:\ngot  %+v\nwant %+v", i, got, want)
			}
		}
		out2, err := again.Marshal()
		if err != nil {
			t.Fatalf("second Marshal: %v", err)
		}
		if string(out2) != string(out) {
			t.Fatalf("second Marshal differs:\n%s\nfirst:\n%s", out2, out)
		}
	})
}
