package prd

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/bench/fixture"
)

// replace returns s with old replaced by new, failing the test unless old
// occurs exactly once: an expectation built from a typo must not pass.
func replace(t testing.TB, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("%q occurs %d times, want 1", old, n)
	}
	return strings.Replace(s, old, new, 1)
}

func mustMarshal(t testing.TB, f *File) string {
	t.Helper()
	out, err := f.Marshal()
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return string(out)
}

// messy has unknown fields at both levels, keys in an unusual order, unicode,
// escapes, nested objects and a 4-space indent.
const messy = `{
    "branchName": "ralph/café",
    "x-meta": {"owner": "zoë", "tags": ["a", "b"], "nested": {"deep": [1, 2.50, true, null, {}]}},
    "userStories": [
        {
            "passes": false,
            "title": "Add cart table 🛒",
            "id": "US-001",
            "custom": {"k": "v"},
            "priority": 2,
            "acceptanceCriteria": ["Typecheck passes", "<b>bold</b> & \u00e9"],
            "notes": ""
        },
        {"id": "US-002", "title": "Second", "dependsOn": ["US-001"], "estimate": 3e0}
    ],
    "project": "Shop",
    "trailing": "end"
}`

func TestMarshalRoundTrip(t *testing.T) {
	f := mustParse(t, messy)
	f.Story("US-001").SetStatus(Status{Passes: true, Attempts: 1})
	f.Story("US-002").Blocked = "Which <db> & why?"
	got := mustMarshal(t, f)
	want := `{
  "branchName": "ralph/café",
  "x-meta": {
    "owner": "zoë",
    "tags": [
      "a",
      "b"
    ],
    "nested": {
      "deep": [
        1,
        2.50,
        true,
        null,
        {}
      ]
    }
  },
  "userStories": [
    {
      "passes": true,
      "title": "Add cart table 🛒",
      "id": "US-001",
      "custom": {
        "k": "v"
      },
      "priority": 2,
      "acceptanceCriteria": [
        "Typecheck passes",
        "<b>bold</b> & \u00e9"
      ],
      "notes": "",
      "attempts": 1
    },
    {
      "id": "US-002",
      "title": "Second",
      "dependsOn": [
        "US-001"
      ],
      "estimate": 3e0,
      "blocked": "Which <db> & why?"
    }
  ],
  "project": "Shop",
  "trailing": "end"
}
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// canonical is a prd.json in the form Marshal writes.
const canonical = `{
  "project": "Shop",
  "branchName": "ralph/checkout",
  "description": "Checkout flow",
  "userStories": [
    {
      "id": "US-001",
      "title": "Add cart table",
      "description": "As a shopper I want ...",
      "acceptanceCriteria": [
        "...",
        "Typecheck passes"
      ],
      "priority": 1,
      "passes": false,
      "notes": "",
      "attempts": 3,
      "blocked": "",
      "failed": true,
      "x-custom": {
        "a": [],
        "b": "\u003c"
      }
    },
    {
      "id": "US-002",
      "title": "Checkout",
      "priority": 2,
      "checks": [
        "go test ./checkout/..."
      ],
      "dependsOn": [
        "US-001"
      ],
      "passes": false,
      "blocked": "Which payment provider?"
    }
  ],
  "x-top": 1.0
}
`

func TestMarshalChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(f *File)
		want   func(t testing.TB) string
	}{
		{
			name:   "nothing changed",
			change: func(*File) {},
			want:   func(testing.TB) string { return canonical },
		},
		{
			name: "status set to what it was",
			change: func(f *File) {
				s := f.Story("US-001")
				s.SetStatus(s.Status())
			},
			want: func(testing.TB) string { return canonical },
		},
		{
			name:   "passes",
			change: func(f *File) { f.Story("US-002").Passes = true },
			want: func(t testing.TB) string {
				return replace(t, canonical, `"passes": false,
      "blocked": "Which`, `"passes": true,
      "blocked": "Which`)
			},
		},
		{
			name:   "present attempts",
			change: func(f *File) { f.Story("US-001").Attempts = 4 },
			want: func(t testing.TB) string {
				return replace(t, canonical, `"attempts": 3,`, `"attempts": 4,`)
			},
		},
		{
			name:   "absent attempts is added at the end",
			change: func(f *File) { f.Story("US-002").Attempts = 1 },
			want: func(t testing.TB) string {
				return replace(t, canonical, `"blocked": "Which payment provider?"`,
					`"blocked": "Which payment provider?",
      "attempts": 1`)
			},
		},
		{
			name:   "absent status at zero is not added",
			change: func(f *File) { f.Story("US-002").Failed = "" },
			want:   func(testing.TB) string { return canonical },
		},
		{
			name:   "unblocked keeps the key",
			change: func(f *File) { f.Story("US-002").Blocked = "" },
			want: func(t testing.TB) string {
				return replace(t, canonical, `"blocked": "Which payment provider?"`, `"blocked": ""`)
			},
		},
		{
			name:   "failed true becomes a reason",
			change: func(f *File) { f.Story("US-001").Failed = "max attempts" },
			want: func(t testing.TB) string {
				return replace(t, canonical, `"failed": true,`, `"failed": "max attempts",`)
			},
		},
		{
			name:   "failed true cleared",
			change: func(f *File) { f.Story("US-001").Failed = "" },
			want: func(t testing.TB) string {
				return replace(t, canonical, `"failed": true,`, `"failed": "",`)
			},
		},
		{
			name: "every status of a story",
			change: func(f *File) {
				f.Story("US-001").SetStatus(Status{Passes: true, Attempts: 0, Blocked: "q?", Failed: ""})
			},
			want: func(t testing.TB) string {
				s := replace(t, canonical, `"passes": false,
      "notes"`, `"passes": true,
      "notes"`)
				return replace(t, s, `"attempts": 3,
      "blocked": "",
      "failed": true,`, `"attempts": 0,
      "blocked": "q?",
      "failed": "",`)
			},
		},
		{
			name:   "other fields are written too",
			change: func(f *File) { f.Project = "Store"; f.Story("US-002").Title = "Pay" },
			want: func(t testing.TB) string {
				s := replace(t, canonical, `"Shop"`, `"Store"`)
				return replace(t, s, `"Checkout"`, `"Pay"`)
			},
		},
		{
			name:   "slice changed in place",
			change: func(f *File) { f.Story("US-002").Checks[0] = "go vet ./..." },
			want: func(t testing.TB) string {
				return replace(t, canonical, `"go test ./checkout/..."`, `"go vet ./..."`)
			},
		},
		{
			name:   "slice cleared",
			change: func(f *File) { f.Story("US-002").DependsOn = nil },
			want: func(t testing.TB) string {
				return replace(t, canonical, `"dependsOn": [
        "US-001"
      ],`, `"dependsOn": [],`)
			},
		},
		{
			name:   "priority removed",
			change: func(f *File) { f.Story("US-002").HasPriority = false },
			want: func(t testing.TB) string {
				return replace(t, canonical, `"priority": 2,
      `, ``)
			},
		},
		{
			name: "answered",
			change: func(f *File) {
				if err := f.Story("US-002").Answer("Stripe & <co>"); err != nil {
					panic(err)
				}
			},
			want: func(t testing.TB) string {
				return replace(t, canonical, `"blocked": "Which payment provider?"`, `"blocked": "",
      "answers": [
        {
          "question": "Which payment provider?",
          "answer": "Stripe & <co>"
        }
      ]`)
			},
		},
		{
			name: "story added",
			change: func(f *File) {
				f.Stories = append(f.Stories, &Story{ID: "US-003", Title: "New", HasPriority: true,
					DependsOn: []string{"US-002"}, Attempts: 1})
			},
			want: func(t testing.TB) string {
				return replace(t, canonical, `"blocked": "Which payment provider?"
    }
  ],`, `"blocked": "Which payment provider?"
    },
    {
      "id": "US-003",
      "title": "New",
      "priority": 0,
      "dependsOn": [
        "US-002"
      ],
      "attempts": 1
    }
  ],`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParse(t, canonical)
			tt.change(f)
			if got, want := mustMarshal(t, f), tt.want(t); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestMarshalNewFile(t *testing.T) {
	f := &File{Project: "Shop", Stories: []*Story{{ID: "US-001", Title: "T", Priority: 1, HasPriority: true}}}
	want := `{
  "project": "Shop",
  "userStories": [
    {
      "id": "US-001",
      "title": "T",
      "priority": 1
    }
  ]
}
`
	if got := mustMarshal(t, f); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if _, err := Parse([]byte(want), "prd.json"); err != nil {
		t.Errorf("Parse of Marshal's output: %v", err)
	}
}

// TestMarshalStable checks that Marshal's output is a fixed point: parsing and
// marshalling it again changes nothing.
func TestMarshalStable(t *testing.T) {
	for _, data := range []string{messy, canonical, typeErrorsFixed} {
		once := mustMarshal(t, mustParse(t, data))
		if twice := mustMarshal(t, mustParse(t, once)); twice != once {
			t.Errorf("second Marshal differs:\n%s\nfirst:\n%s", twice, once)
		}
	}
}

// typeErrorsFixed is a valid file written compactly.
const typeErrorsFixed = `{"userStories":[{"id":"A","title":"t","priority":-1,"failed":false},{"id":"B","title":"u"}]}`

// TestMarshalJoinsPieces: the stories a save writes as they were parsed,
// one after another in the text, go out as one piece of that text, so that
// a change to one story of many writes a few pieces, not two a story; the
// output is the same.
func TestMarshalJoinsPieces(t *testing.T) {
	data := fixture.PRD(100, 50) // laid out as Marshal writes it
	f := mustParse(t, string(data))
	if text, _ := f.marshal(); len(text) != 3 || string(bytes.Join(text, nil)) != string(data) {
		t.Fatalf("unchanged file: %d pieces, want 3 (before, stories, after); same text: %v", len(text), string(bytes.Join(text, nil)) == string(data))
	}
	f.Stories[40].Attempts++
	text, _ := f.marshal()
	want := mustMarshal(t, mustParse(t, mustMarshal(t, f)))
	if got := string(bytes.Join(text, nil)); got != want {
		t.Fatalf("pieces joined:\n%s\nwant:\n%s", got, want)
	}
	// Before the stories, the stories up to the changed one, the separator
	// and the changed one, the separator and the rest, after the stories.
	if len(text) != 7 {
		t.Fatalf("one story changed: %d pieces, want 7", len(text))
	}
	// Stories moved or taken out are not joined to what is beside them in
	// the text, however it is laid out.
	for _, edit := range []func(f *File){
		func(f *File) { f.Stories[10], f.Stories[11] = f.Stories[11], f.Stories[10] },
		func(f *File) { f.Stories = slices.Delete(f.Stories, 41, 42) },
		func(f *File) { f.Stories = append(f.Stories[:1:1], f.Stories[2:]...) },
	} {
		f := mustParse(t, string(data))
		edit(f)
		text, _ := f.marshal()
		want, err := f.refMarshal()
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Join(text, nil); !bytes.Equal(got, want) {
			t.Fatalf("pieces joined after a move:\n%s\nwant:\n%s", got, want)
		}
	}
	// A text that is not laid out as Marshal writes it has nothing to join.
	if text, _ := mustParse(t, messy).marshal(); len(text) != 5 {
		t.Fatalf("messy: %d pieces, want 5", len(text))
	}
}

// TestMarshalRuns: after ReadOnce, Marshal notes the stories written as
// parsed in runs, and writes what it writes without them.
func TestMarshalRuns(t *testing.T) {
	data := fixture.PRD(50, 20)
	marshal := func() ([][]byte, *layout) {
		f := mustParse(t, string(data))
		f.Stories[30].Attempts++
		return f.marshal()
	}
	want, wl := marshal()
	ReadOnce()
	t.Cleanup(func() { readOnce.Store(false) })
	got, l := marshal()
	if g, w := bytes.Join(got, nil), bytes.Join(want, nil); !bytes.Equal(g, w) {
		t.Errorf("after ReadOnce:\n%s\nwant:\n%s", g, w)
	}
	if len(wl.stories) != 50 || len(l.stories) != 3 {
		t.Errorf("stories noted: %d, and %d after ReadOnce; want 50 and 3 (the runs before and after the one changed, and it)", len(wl.stories), len(l.stories))
	}
}
