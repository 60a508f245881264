package api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// streamWriter prints the run as Claude Code's stream-json: one JSON event
// per line.
type streamWriter struct {
	mu      sync.Mutex
	w       io.Writer
	model   string
	session string
	now     func() time.Time
	last    time.Time // the last line written
	ids     int
}

func newStreamWriter(w io.Writer, model string, now func() time.Time) *streamWriter {
	var b [16]byte
	rand.Read(b[:])
	return &streamWriter{w: w, model: model, session: hex.EncodeToString(b[:]), now: now}
}

// emit writes one event. A failed write is not reported: whoever reads the
// stream has gone, and the run's work in the directory still counts.
func (s *streamWriter) emit(ev map[string]any) {
	ev["session_id"] = s.session
	line, err := json.Marshal(ev)
	if err != nil {
		panic(err) // only plain values are emitted
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.Write(append(line, '\n'))
	s.last = s.now()
}

func (s *streamWriter) init(cwd string, tools []string) {
	s.emit(map[string]any{
		"type": "system", "subtype": "init", "cwd": cwd, "model": s.model,
		"tools": tools, "permissionMode": "bypassPermissions",
	})
}

// newID makes a message id for a reply whose API gave none.
func (s *streamWriter) newID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return "msg_ralph_" + s.session[:8] + "_" + strconv.Itoa(s.ids)
}

func (s *streamWriter) assistant(id string, content []map[string]any) {
	s.emit(map[string]any{
		"type": "assistant",
		"message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": s.model,
			"content": content,
		},
		"parent_tool_use_id": nil,
	})
}

func (s *streamWriter) text(id, text string) {
	s.assistant(id, []map[string]any{{"type": "text", "text": text}})
}

func (s *streamWriter) toolUse(id string, c toolCall) {
	input := json.RawMessage(c.Args)
	if _, err := objectArgs(c.Args); err != nil {
		// Shown as the model sent it, as a string.
		b, _ := json.Marshal(map[string]string{"arguments": c.Args})
		input = b
	}
	s.assistant(id, []map[string]any{{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input}})
}

func (s *streamWriter) toolResults(rs []toolResult) {
	content := make([]map[string]any, 0, len(rs))
	for _, r := range rs {
		content = append(content, map[string]any{
			"type": "tool_result", "tool_use_id": r.CallID, "content": r.Content, "is_error": r.IsError,
		})
	}
	s.emit(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": content},
		"parent_tool_use_id": nil,
	})
}

// apiRetry says that a failed request is sent again after wait, as Claude
// Code's system/api_retry does.
func (s *streamWriter) apiRetry(attempt, max int, wait time.Duration, e *apiError) {
	ev := map[string]any{
		"type": "system", "subtype": "api_retry", "attempt": attempt, "max_retries": max,
		"retry_delay_ms": wait.Milliseconds(), "error": e.kind(),
	}
	if e.Status != 0 {
		ev["error_status"] = e.Status
	} else {
		ev["error"] = "network error"
	}
	ev["message"] = e.Error()
	s.emit(ev)
}

// keepAlive is how often the run shows it is alive while a reply streams
// in without anything to print (a long tool call's arguments), and while
// it waits to send a request again, so that ralph's idle timeout measures
// the model, not the printing.
const keepAlive = 5 * time.Second

// alive prints a stream_event ping when nothing was printed for keepAlive.
func (s *streamWriter) alive() {
	s.mu.Lock()
	quiet := s.now().Sub(s.last) >= keepAlive
	s.mu.Unlock()
	if quiet {
		s.ping()
	}
}

// ping prints a stream_event ping, which says only that the run is alive:
// ralph shows and reads nothing of it.
func (s *streamWriter) ping() {
	s.emit(map[string]any{"type": "stream_event", "event": map[string]any{"type": "ping"}})
}

// resultEvent is the run's last event.
type resultEvent struct {
	Subtype   string // success | error_max_turns | error_during_execution
	IsError   bool   // an API error ended the run
	Text      string
	Turns     int
	Usage     usage
	Cost      *float64 // nil: unknown
	Duration  time.Duration
	Status    int    // the HTTP status of the API error, if any
	ErrorType string // its type
}

func (s *streamWriter) result(r resultEvent) {
	ev := map[string]any{
		"type": "result", "subtype": r.Subtype, "is_error": r.IsError,
		"result": r.Text, "num_turns": r.Turns, "duration_ms": r.Duration.Milliseconds(),
		"usage": map[string]any{
			"input_tokens":                r.Usage.Input,
			"output_tokens":               r.Usage.Output,
			"cache_creation_input_tokens": r.Usage.CacheCreation,
			"cache_read_input_tokens":     r.Usage.CacheRead,
		},
	}
	if r.Cost != nil {
		ev["total_cost_usd"] = *r.Cost
	}
	if r.Status != 0 {
		ev["api_error_status"] = r.Status
	}
	if r.ErrorType != "" {
		ev["api_error_type"] = r.ErrorType
	}
	s.emit(ev)
}

// textSink shows a reply's text as it streams in, a line at a time: each
// complete line becomes an assistant message, so that the text reads live
// and no message ends in the middle of a line.
type textSink struct {
	out     *streamWriter
	msgID   string
	pending strings.Builder
}

func (t *textSink) id(apiID string) string {
	if t.msgID == "" {
		t.msgID = apiID
		if t.msgID == "" {
			t.msgID = t.out.newID()
		}
	}
	return t.msgID
}

func (t *textSink) text(s string) {
	t.pending.WriteString(s)
	p := t.pending.String()
	if i := strings.LastIndexByte(p, '\n'); i >= 0 {
		t.out.text(t.id(""), p[:i+1])
		t.pending.Reset()
		t.pending.WriteString(p[i+1:])
	}
}

func (t *textSink) endText() {
	if t.pending.Len() > 0 {
		t.out.text(t.id(""), t.pending.String())
		t.pending.Reset()
	}
}

func (t *textSink) alive() { t.out.alive() }
