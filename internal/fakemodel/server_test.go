package fakemodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// startServer starts a server of convs, closed at the end of the test.
func startServer(t *testing.T, convs ...Conversation) *Server {
	t.Helper()
	s, err := Start(convs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// post sends a JSON body to path on s with the headers given and returns
// the response, whose body is closed at the end of the test.
func post(t *testing.T, s *Server, path, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// mustJSON is v marshalled.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sseEvent is one named server-sent event, as the Messages and Responses
// APIs stream them.
type sseEvent struct {
	name string
	data map[string]any
}

// readEvents reads a stream of named server-sent events to its end; each
// event's data carries its name as its type.
func readEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var evs []sseEvent
	var name string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("event %s: %v", name, err)
			}
			if data["type"] != name {
				t.Errorf("event %q carries type %q", name, data["type"])
			}
			evs = append(evs, sseEvent{name, data})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// eventNames lists the events' names in order.
func eventNames(evs []sseEvent) []string {
	var names []string
	for _, ev := range evs {
		names = append(names, ev.name)
	}
	return names
}

// readData reads a stream of data-only server-sent events to its end, as
// the Chat Completions and Gemini APIs stream them, and returns each
// event's data.
func readData(t *testing.T, r io.Reader) []string {
	t.Helper()
	var datas []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		datas = append(datas, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return datas
}
