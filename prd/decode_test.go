package prd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// exported returns the exported fields of s, for comparisons.
func exported(s *Story) Story {
	c := *s
	c.orig, c.raw, c.sum, c.idHash, c.canonical = nil, nil, 0, 0, false
	return c
}

func mustParse(t testing.TB, data string) *File {
	t.Helper()
	f, err := Parse([]byte(data), "prd.json")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func TestParseStory(t *testing.T) {
	tests := []struct {
		name  string
		story string // the JSON of the only story
		want  Story
	}{
		{
			name: "every field",
			story: `{"id": "US-001", "title": "Add cart", "description": "As a shopper",
				"acceptanceCriteria": ["a", "Typecheck passes"], "priority": 3, "notes": "n",
				"checks": ["go test ./..."], "dependsOn": [], "passes": true, "attempts": 2,
				"blocked": "which db?", "failed": "too hard"}`,
			want: Story{ID: "US-001", Title: "Add cart", Description: "As a shopper",
				AcceptanceCriteria: []string{"a", "Typecheck passes"}, Priority: 3, HasPriority: true,
				Notes: "n", Checks: []string{"go test ./..."}, DependsOn: []string{}, Passes: true,
				Attempts: 2, Blocked: "which db?", Failed: "too hard"},
		},
		{
			name:  "only the required fields",
			story: `{"id": "US-001", "title": "T"}`,
			want:  Story{ID: "US-001", Title: "T"},
		},
		{
			name: "null is absent",
			story: `{"id": "US-001", "title": "T", "description": null, "acceptanceCriteria": null,
				"priority": null, "passes": null, "attempts": null, "blocked": null, "failed": null}`,
			want: Story{ID: "US-001", Title: "T"},
		},
		{
			name:  "priority zero is a priority",
			story: `{"id": "US-001", "title": "T", "priority": 0}`,
			want:  Story{ID: "US-001", Title: "T", HasPriority: true},
		},
		{
			name:  "negative priority",
			story: `{"id": "US-001", "title": "T", "priority": -2}`,
			want:  Story{ID: "US-001", Title: "T", Priority: -2, HasPriority: true},
		},
		{
			name:  "failed true",
			story: `{"id": "US-001", "title": "T", "failed": true}`,
			want:  Story{ID: "US-001", Title: "T", Failed: "failed"},
		},
		{
			name:  "failed false",
			story: `{"id": "US-001", "title": "T", "failed": false}`,
			want:  Story{ID: "US-001", Title: "T"},
		},
		{
			name:  "escapes and unicode",
			story: `{"id": "US-\u0030\u0030\u0031", "title": "caf\u00e9 ☕ \"q\" \\"}`,
			want:  Story{ID: "US-001", Title: "café ☕ \"q\" \\"},
		},
		{
			name: "answers",
			story: `{"id": "US-001", "title": "T", "answers": [
				{"question": "Which db?", "answer": "Postgres", "by": "zoë"}, {"answer": "only"}, {}]}`,
			want: Story{ID: "US-001", Title: "T", Answers: []Answer{
				{Question: "Which db?", Answer: "Postgres"}, {Answer: "only"}, {}}},
		},
		{
			name:  "no answers",
			story: `{"id": "US-001", "title": "T", "answers": []}`,
			want:  Story{ID: "US-001", Title: "T", Answers: []Answer{}},
		},
		{
			// Keys are matched exactly, unlike encoding/json, so this is an
			// unknown field that is kept.
			name:  "keys are case-sensitive",
			story: `{"id": "US-001", "title": "T", "Passes": true}`,
			want:  Story{ID: "US-001", Title: "T"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParse(t, `{"userStories": [`+tt.story+`]}`)
			if len(f.Stories) != 1 {
				t.Fatalf("got %d stories, want 1", len(f.Stories))
			}
			if got := exported(f.Stories[0]); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseHeader(t *testing.T) {
	f := mustParse(t, `{"project": "Shop", "branchName": "ralph/checkout", "description": "Checkout flow",
		"userStories": [{"id": "US-001", "title": "T"}]}`)
	if f.Project != "Shop" || f.BranchName != "ralph/checkout" || f.Description != "Checkout flow" {
		t.Errorf("got project %q, branchName %q, description %q; want %q, %q, %q",
			f.Project, f.BranchName, f.Description, "Shop", "ralph/checkout", "Checkout flow")
	}
}

// typeErrors is a file with a value of the wrong type on almost every line.
const typeErrors = `{
  "project": 1,
  "userStories": [
    {
      "id": "US-001",
      "title": "T",
      "priority": "1",
      "acceptanceCriteria": ["ok", 2],
      "passes": "no",
      "attempts": 1.5,
      "failed": 3,
      "checks": "go test"
    },
    "US-002"
  ]
}
`

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		// Syntax.
		{
			name: "trailing comma",
			data: "{\n  \"project\": \"Shop\",\n  \"userStories\": [],\n}\n",
			want: `prd.json:4:1: invalid character '}' looking for beginning of object key string`,
		},
		{
			name: "unexpected end",
			data: "{\n  \"project\": \"Shop\",\n",
			want: `prd.json:3:1: unexpected end of JSON input`,
		},
		{
			name: "empty",
			data: "",
			want: `prd.json:1:1: unexpected end of JSON input`,
		},
		{
			name: "columns count characters",
			data: `{"project": "Café" "x": 1}`,
			want: `prd.json:1:20: invalid character '"' after object key:value pair`,
		},
		{
			name: "after the top-level value",
			data: "{}\nx",
			want: `prd.json:2:1: invalid character 'x' after top-level value`,
		},

		// Types.
		{
			name: "top level is an array",
			data: "\n  []",
			want: `prd.json:2:3: want an object, got array`,
		},
		{
			name: "userStories is an object",
			data: `{"userStories": {}}`,
			want: `prd.json:1:17: userStories: want an array, got object`,
		},
		{
			name: "every type error",
			data: typeErrors,
			want: `prd.json:2:14: project: want a string, got number
prd.json:7:19: userStories[0].priority: want a number, got string
prd.json:8:36: userStories[0].acceptanceCriteria[1]: want a string, got number
prd.json:9:17: userStories[0].passes: want a boolean, got string
prd.json:10:19: userStories[0].attempts: want an integer, got 1.5
prd.json:11:17: userStories[0].failed: want a string or a boolean, got number
prd.json:12:17: userStories[0].checks: want an array, got string
prd.json:14:5: userStories[1]: want an object, got string`,
		},
		{
			name: "answers of the wrong type",
			data: `{"userStories":[{"id":"A","title":"t","answers":"x"},{"id":"B","title":"u","answers":[1,{"question":2,"answer":null}]}]}`,
			want: `prd.json:1:49: userStories[0].answers: want an array, got string
prd.json:1:87: userStories[1].answers[0]: want an object with a question and an answer, got number
prd.json:1:101: userStories[1].answers[1].question: want a string, got number`,
		},
		{
			name: "integer with an exponent",
			data: `{"userStories":[{"id":"A","title":"t","priority":1e2}]}`,
			want: `prd.json:1:50: userStories[0].priority: want an integer, got 1e2`,
		},
		{
			name: "integer out of range",
			data: `{"userStories":[{"id":"A","title":"t","priority":99999999999999999999}]}`,
			want: `prd.json:1:50: userStories[0].priority: 99999999999999999999 is out of range`,
		},
		{
			name: "null in an array of strings",
			data: `{"userStories":[{"id":"A","title":"t","dependsOn":[null]}]}`,
			want: `prd.json:1:52: userStories[0].dependsOn[0]: want a string, got null`,
		},
		{
			name: "duplicate key",
			data: `{"userStories":[{"id":"A","title":"t","passes":true,"passes":false}]}`,
			want: `prd.json:1:62: userStories[0].passes: duplicate key`,
		},

		// Meaning.
		{
			name: "no userStories",
			data: `{"project": "Shop"}`,
			want: `prd.json: missing userStories array`,
		},
		{
			name: "userStories null",
			data: `{"userStories": null}`,
			want: `prd.json: missing userStories array`,
		},
		{
			name: "story without id",
			data: `{"userStories": [{"id": "US-001", "title": "a"}, {"id": "US-002", "title": "b"}, {"title": "c"}]}`,
			want: `prd.json: userStories[2]: missing id`,
		},
		{
			name: "byte order mark",
			data: "\ufeff{\"userStories\": [{\"id\": \"A\", \"title\": \"a\"}]}",
			want: `prd.json:1:1: starts with a byte order mark (U+FEFF): save it as UTF-8 without one`,
		},
		{
			name: "id with a space",
			data: `{"userStories": [{"id": "A ", "title": "a"}, {"id": "A", "title": "b"}]}`,
			want: `prd.json: userStories[0]: id "A ": contains a space or a control character`,
		},
		{
			name: "bad id named by its place",
			data: `{"userStories": [{"id": "US\n1"}, {"id": "\u001b[31mX", "title": "x", "attempts": -1}]}`,
			want: "prd.json: userStories[0]: id \"US\\n1\": contains a space or a control character\n" +
				"prd.json: userStories[0]: missing title\n" +
				"prd.json: userStories[1]: id \"\\x1b[31mX\": contains a space or a control character\n" +
				"prd.json: userStories[1]: attempts: want 0 or more, got -1",
		},
		{
			name: "bad id in a cycle named by its place",
			data: `{"userStories": [{"id": "\u001b[31mA", "title": "a", "dependsOn": ["B"]}, {"id": "B", "title": "b", "dependsOn": ["\u001b[31mA"]}]}`,
			want: "prd.json: userStories[0]: id \"\\x1b[31mA\": contains a space or a control character\n" +
				"prd.json: dependsOn cycle: userStories[0] -> B -> userStories[0]",
		},
		{
			name: "duplicated id in a cycle named by its place",
			data: `{"userStories": [{"id": "A", "dependsOn": ["B"]}, {"id": "A", "title": "a"}, {"id": "B", "title": "b", "dependsOn": ["A"]}]}`,
			want: "prd.json: userStories[0]: missing title\n" +
				"prd.json: userStories[1]: duplicate id \"A\" (first at userStories[0])\n" +
				"prd.json: dependsOn cycle: userStories[0] -> B -> userStories[0]",
		},
		{
			// RALPH_TASK_ID holds it, and Linux takes no string over
			// 128 KiB into a program's environment.
			name: "id too long",
			data: `{"userStories": [{"id": "` + strings.Repeat("A", 200000) + `", "title": "a"}, {"id": "` + strings.Repeat("B", 256) + `", "title": "b"}]}`,
			want: `prd.json: userStories[0]: id "` + strings.Repeat("A", 253) + `…": is 200000 bytes long; an id is at most 256`,
		},
		{
			name: "id with a newline",
			data: `{"userStories": [{"id": "US\n1", "title": "a"}]}`,
			want: `prd.json: userStories[0]: id "US\n1": contains a space or a control character`,
		},
		{
			name: "empty id",
			data: `{"userStories": [{"id": "", "title": "a"}]}`,
			want: `prd.json: userStories[0]: missing id`,
		},
		{
			name: "duplicate id",
			data: `{"userStories": [{"id": "US-001", "title": "a"}, {"id": "US-002", "title": "b"},
				{"id": "US-003", "title": "c"}, {"id": "US-002", "title": "d"}]}`,
			want: `prd.json: userStories[3]: duplicate id "US-002" (first at userStories[1])`,
		},
		{
			name: "story without title",
			data: `{"userStories": [{"id": "US-001"}]}`,
			want: `prd.json: US-001: missing title`,
		},
		{
			name: "negative attempts",
			data: `{"userStories": [{"id": "US-001", "title": "a", "attempts": -1}]}`,
			want: `prd.json: US-001: attempts: want 0 or more, got -1`,
		},
		{
			name: "empty checks",
			data: `{"userStories": [{"id": "US-001", "title": "a", "checks": ["go vet", "", "  "]}]}`,
			want: "prd.json: US-001: checks[1] is empty\nprd.json: US-001: checks[2] is empty",
		},
		{
			name: "control characters in a title and the project's name",
			data: `{"project": "Shop\n", "userStories": [{"id": "US-001", "title": "a\u001b]0;pwned\u0007"}]}`,
			want: "prd.json: project: U+000A is a control character: a project's name is a line of plain text\n" +
				"prd.json: US-001: title: U+001B is a control character: a title is a line of plain text",
		},
		{
			name: "a bidirectional override in a title",
			data: `{"userStories": [{"id": "US-001", "title": "pay \u202etxt.exe"}]}`,
			want: "prd.json: US-001: title: U+202E is a control character: a title is a line of plain text",
		},
		{
			name: "duplicate key in an answer",
			data: `{"userStories": [{"id": "A", "title": "a", "answers": [{"question": "q", "answer": "x", "answer": "y"}]}]}`,
			want: `prd.json:1:99: userStories[0].answers[0].answer: duplicate key`,
		},
		{
			name: "invisible characters in ids",
			data: `{"userStories": [{"id": "US-001\u200b", "title": "a"}, {"id": "US-\u202e002", "title": "b"}]}`,
			want: "prd.json: userStories[0]: id \"US-001\\u200b\": contains U+200B, an invisible character\n" +
				"prd.json: userStories[1]: id \"US-\\u202e002\": contains U+202E, an invisible character",
		},
		{
			name: "control characters in a blocked story's question",
			data: `{"userStories": [{"id": "US-001", "title": "a", "blocked": "Which?\u001b[2J\nthen"}, {"id": "US-002", "title": "b", "blocked": "Which \u202eone?"}]}`,
			want: "prd.json: US-001: blocked: U+001B is a control character: a question is a line of plain text\n" +
				"prd.json: US-002: blocked: U+202E is a control character: a question is a line of plain text",
		},
		{
			name: "a check twice",
			data: `{"userStories": [{"id": "US-001", "title": "a", "checks": ["go vet", "go test", "go vet"]}]}`,
			want: "prd.json: US-001: checks[2] repeats checks[0]",
		},
		{
			name: "a check with a NUL byte",
			data: `{"userStories": [{"id": "US-001", "title": "a", "checks": ["go vet\u0000"]}]}`,
			want: `prd.json: US-001: checks[0]: "go vet\x00": a NUL byte cannot be passed to a program`,
		},
		{
			name: "dependsOn unknown",
			data: `{"userStories": [{"id": "US-001", "title": "a", "dependsOn": ["US-009"]}]}`,
			want: `prd.json: US-001: dependsOn names unknown story "US-009"`,
		},
		{
			name: "dependsOn itself",
			data: `{"userStories": [{"id": "US-001", "title": "a", "dependsOn": ["US-001"]}]}`,
			want: `prd.json: US-001: dependsOn names the story itself`,
		},
		{
			name: "dependsOn cycle",
			data: `{"userStories": [{"id": "US-001", "title": "a", "dependsOn": ["US-002"]},
				{"id": "US-002", "title": "b", "dependsOn": ["US-001"]}]}`,
			want: `prd.json: dependsOn cycle: US-001 -> US-002 -> US-001`,
		},
		{
			name: "a cycle through a dependency named twice",
			data: `{"userStories": [{"id": "A", "title": "a", "dependsOn": ["B"]},
				{"id": "B", "title": "b", "dependsOn": ["A", "A"]}]}`,
			want: `prd.json: dependsOn cycle: A -> B -> A`,
		},
		{
			name: "two cycles",
			data: `{"userStories": [{"id": "A", "title": "a", "dependsOn": ["B"]},
				{"id": "B", "title": "b", "dependsOn": ["C", "A"]}, {"id": "C", "title": "c", "dependsOn": ["B"]},
				{"id": "D", "title": "d", "dependsOn": ["A"]}]}`,
			want: "prd.json: dependsOn cycle: B -> C -> B\nprd.json: dependsOn cycle: A -> B -> A",
		},
		{
			name: "type errors and what the rest means",
			data: `{"userStories": [
				{"id": "A", "title": "a", "passes": "yes", "dependsOn": ["Q"]},
				{"id": "A", "title": 7}]}`,
			want: `prd.json:2:41: userStories[0].passes: want a boolean, got string
prd.json:3:26: userStories[1].title: want a string, got number
prd.json: userStories[1]: duplicate id "A" (first at userStories[0])
prd.json: userStories[0]: dependsOn names unknown story "Q"`,
		},
		{
			name: "a mistyped check: nothing said of the others, whose places moved",
			data: `{"userStories": [{"id": "A", "title": "a", "checks": ["go vet", 1, " "]}]}`,
			want: `prd.json:1:65: userStories[0].checks[1]: want a string, got number`,
		},
		{
			name: "a mistyped id: nothing said of it, or of dependencies",
			data: `{"userStories": [
				{"id": 5, "title": "c", "dependsOn": ["5"]},
				{"id": "D", "title": "d", "dependsOn": ["D"]}]}`,
			want: `prd.json:2:12: userStories[0].id: want a string, got number
prd.json: D: dependsOn names the story itself`,
		},
		{
			name: "all problems at once",
			data: `{"userStories": [
				{"id": "A", "dependsOn": ["B", "A", "Q"], "checks": [""]},
				{"id": "B", "title": "b", "dependsOn": ["C"]},
				{"id": "C", "title": "c", "dependsOn": ["A"], "attempts": -1},
				{"id": "C", "title": "c2"},
				{"title": "e"}]}`,
			want: `prd.json: A: missing title
prd.json: A: checks[0] is empty
prd.json: userStories[2]: attempts: want 0 or more, got -1
prd.json: userStories[3]: duplicate id "C" (first at userStories[2])
prd.json: userStories[4]: missing id
prd.json: A: dependsOn names the story itself
prd.json: A: dependsOn names unknown story "Q"
prd.json: dependsOn cycle: A -> B -> userStories[2] -> A`,
		},
	}
	// Each file again with the stories' problems counted by a goroutine
	// of their own, as validate counts a long list's on two CPUs.
	defer func(n int) { countApart = n }(countApart)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, apart := range []int{countApart, 1} {
		countApart = apart
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/apart %d", tt.name, apart), func(t *testing.T) {
				f, err := Parse([]byte(tt.data), "prd.json")
				if err == nil {
					t.Fatalf("Parse succeeded, want error:\n%s", tt.want)
				}
				if f != nil {
					t.Errorf("Parse returned a file with its error")
				}
				if got := err.Error(); got != tt.want {
					t.Errorf("got error:\n%s\nwant:\n%s", got, tt.want)
				}
			})
		}
	}
}

func TestParseSyntaxErrorUnwraps(t *testing.T) {
	_, err := Parse([]byte("{"), "work/prd.json")
	var serr *json.SyntaxError
	if !errors.As(err, &serr) {
		t.Errorf("error %v does not wrap a *json.SyntaxError", err)
	}
	if !strings.HasPrefix(err.Error(), "work/prd.json:1:2: ") {
		t.Errorf("error %q does not name work/prd.json:1:2", err)
	}
}

// TestStoryDecodeKeepsNoSpare: a story decoded on its own, as one that
// Save changed is on the next Parse, takes only the room its lists need:
// Parse may remember the story, and so the block its lists were cut from,
// for as long as the loop runs.
func TestStoryDecodeKeepsNoSpare(t *testing.T) {
	d := &decoder{text: newText([]byte(`{"id": "A", "title": "a", "acceptanceCriteria": ["x", "y"], "dependsOn": ["B"]}`)), name: "prd.json"}
	var s Story
	if object(d, &s, 0, storyKeys, nil) < 0 || len(d.errs) > 0 || len(s.AcceptanceCriteria) != 2 || len(s.DependsOn) != 1 {
		t.Fatalf("decoded %+v, errors %v", s, d.errs)
	}
	if len(d.slab) != 0 {
		t.Errorf("the story's lists were cut from a block with room for %d more strings", len(d.slab))
	}
}

// TestParseDeep: text nested deeper than the decoder checks itself is left
// to encoding/json, which accepts it up to its own limit: such a file reads
// as any other, and one nested deeper still is a syntax error.
func TestParseDeep(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, n := range []int{maxScanDepth - 2, maxScanDepth + 10} {
		data := `{"x": ` + nest(n) + `, "userStories": [{"id": "A", "title": "a", "notes": ` + nest(n) + `, "y": {"z": ` + nest(n) + `}}]}`
		_, err := Parse([]byte(data), "prd.json")
		if want := "prd.json:1:"; err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "userStories[0].notes: want a string, got array") {
			t.Fatalf("nested %d deep: got %v, want the notes' type error", n, err)
		}
		data = strings.Replace(data, `"notes": `+nest(n), `"notes": "n"`, 1)
		f, err := Parse([]byte(data), "prd.json")
		if err != nil {
			t.Fatalf("nested %d deep: %v", n, err)
		}
		if len(f.Stories) != 1 || f.Stories[0].ID != "A" || f.Stories[0].Notes != "n" {
			t.Fatalf("nested %d deep: stories %+v", n, f.Stories)
		}
		f.Stories[0].Passes = true
		out := mustMarshal(t, f)
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(out)); err != nil || !strings.Contains(compact.String(), `"x":`+nest(n)+`,`) {
			t.Fatalf("nested %d deep: Marshal wrote\n%s", n, out)
		}
		if again := mustParse(t, out); !again.Stories[0].Passes {
			t.Fatalf("nested %d deep: the story changed reads back as %+v", n, again.Stories[0])
		}
	}
	_, err := Parse([]byte(`{"x": `+nest(10001)+`}`), "prd.json")
	var serr *json.SyntaxError
	if !errors.As(err, &serr) || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("nested 10001 deep: got %v, want encoding/json's syntax error", err)
	}
}

// FuzzDecodeSame checks the values Parse decodes against encoding/json's
// reading of the same text: every string (escapes, invalid UTF-8 and all),
// list and number that a file that parses holds.
func FuzzDecodeSame(f *testing.F) {
	for _, seed := range []string{canonical, messy, typeErrorsFixed,
		`{"project":"caf\u00e9 \"x\"","userStories":[{"id":"A","title":"t\u00e9","notes":"\ud83d\ude00 \u00e9","acceptanceCriteria":["\\n","é"],"answers":[{"question":"q\t","answer":"a"}]}]}`,
		"{\"userStories\":[{\"id\":\"A\",\"title\":\"t\xff\xfe\",\"description\":\"\xc3\"}]}"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		forget()
		file, err := Parse(data, "prd.json")
		if err != nil {
			return
		}
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("Parse accepts what encoding/json does not: %v", err)
		}
		str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
		strs := func(m map[string]any, k string) []string {
			var ss []string
			for _, e := range m[k].([]any) {
				ss = append(ss, e.(string))
			}
			return ss
		}
		for _, c := range []struct{ got, want string }{{file.Project, str(v, "project")}, {file.BranchName, str(v, "branchName")}, {file.Description, str(v, "description")}} {
			if c.got != c.want {
				t.Fatalf("header: got %q, want %q", c.got, c.want)
			}
		}
		list, _ := v["userStories"].([]any)
		for i, s := range file.Stories {
			m := list[i].(map[string]any)
			for _, c := range []struct{ got, want string }{{s.ID, str(m, "id")}, {s.Title, str(m, "title")},
				{s.Description, str(m, "description")}, {s.Notes, str(m, "notes")}, {s.Blocked, str(m, "blocked")}} {
				if c.got != c.want {
					t.Fatalf("story %d: got %q, want %q", i, c.got, c.want)
				}
			}
			for k, got := range map[string][]string{"acceptanceCriteria": s.AcceptanceCriteria, "checks": s.Checks, "dependsOn": s.DependsOn} {
				if _, ok := m[k].([]any); ok && !slices.Equal(got, strs(m, k)) {
					t.Fatalf("story %d: %s %q, want %q", i, k, got, strs(m, k))
				}
			}
			if p, ok := m["priority"].(float64); ok && float64(s.Priority) != p {
				t.Fatalf("story %d: priority %d, want %v", i, s.Priority, p)
			}
			as, _ := m["answers"].([]any)
			for j, a := range s.Answers {
				am, _ := as[j].(map[string]any)
				if a.Question != str(am, "question") || a.Answer != str(am, "answer") {
					t.Fatalf("story %d: answer %d %+v, want %v", i, j, a, am)
				}
			}
		}
	})
}
