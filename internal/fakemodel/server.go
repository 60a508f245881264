// Package fakemodel is a fake model API server for ralph's end-to-end tests:
// it listens on 127.0.0.1 only and speaks just enough of the Anthropic
// Messages API, the OpenAI Responses and Chat Completions APIs and Gemini's
// streamGenerateContent for the real agent CLIs to run against it offline.
//
// A server replays scripted conversations. A request belongs to the
// conversation whose Match string appears in the request's first user
// message; its step is the number of tool results the request's history
// holds, so a CLI that retries a request gets the same answer again. Faults
// (a 429 with a reset hint, a 500, a slow reply) are served before a step's
// answer, once each.
//
// The server is also the agents' HTTPS proxy: any attempt to reach another
// host through it is recorded as an escape, which tests treat as a failure.
package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Conversation is the script of one agent run.
type Conversation struct {
	// Match selects the conversation: a substring of the first user
	// message, such as a story id.
	Match string
	// Steps are the model's answers, one per step: a tool call, or the
	// final text when Tool is nil.
	Steps []Step
	// Faults are served instead of the answer at a step, once each, in
	// order, keyed by step.
	Faults map[int][]Fault
}

// Step is one answer of the model.
type Step struct {
	Tool *ToolCall
	Text string
}

// ToolCall asks the agent to run one of its own tools.
type ToolCall struct {
	Name  string
	Input map[string]any
}

// Fault is an injected failure.
type Fault struct {
	Status  int               // HTTP status; 0 with a Delay: answer normally, late
	Headers map[string]string // e.g. retry-after
	Body    string            // the error body, in the API's own shape
	Delay   time.Duration
}

// Usage is what every answer reports: fixed, so ledgers can be asserted.
var Usage = struct{ Input, Output int }{Input: 100, Output: 20}

// Request is what a dialect reads from a request.
type Request struct {
	FirstUser   string
	ToolResults int
	Stream      bool
	Model       string
}

// dialect is one API's wire format.
type dialect interface {
	// parse reads a request body.
	parse(r *http.Request, body []byte) (Request, error)
	// answer writes a step in the API's format.
	answer(w http.ResponseWriter, req Request, s Step)
	// fail writes a fault's error in the API's format when the fault has
	// no Body of its own.
	fail(w http.ResponseWriter, f Fault)
}

// dialects maps a route (an http.ServeMux pattern) to its dialect; each
// API's file registers itself.
var dialects = map[string]func() dialect{}

// Server is a running fake model API.
type Server struct {
	URL string

	ln    net.Listener
	srv   *http.Server
	mu    sync.Mutex
	convs []*conversation
	log   []string
	esc   []string
}

type conversation struct {
	Conversation
	faults map[int][]Fault
}

// Start starts a server on a free port of 127.0.0.1.
func Start(convs ...Conversation) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{ln: ln, URL: "http://" + ln.Addr().String()}
	for _, c := range convs {
		faults := map[int][]Fault{}
		for k, v := range c.Faults {
			faults[k] = append([]Fault(nil), v...)
		}
		s.convs = append(s.convs, &conversation{Conversation: c, faults: faults})
	}
	mux := http.NewServeMux()
	for pattern, d := range dialects {
		mux.Handle(pattern, s.handler(d()))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record("unhandled %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	s.srv = &http.Server{Handler: s.proxyGuard(mux), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Log returns one line per request served, for test failure messages.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// Escapes returns the attempts to reach any other host through the proxy.
func (s *Server) Escapes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.esc...)
}

func (s *Server) record(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

// proxyGuard turns away, and records, every request meant for another
// host: CONNECT tunnels and absolute-URI proxy requests.
func (s *Server) proxyGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect || (r.URL.Host != "" && r.URL.Host != r.Host) || !isLocal(r.Host) {
			s.mu.Lock()
			s.esc = append(s.esc, fmt.Sprintf("%s %s (host %s)", r.Method, r.URL, r.Host))
			s.mu.Unlock()
			http.Error(w, "fakemodel: this machine has no way out", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLocal(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return host == "127.0.0.1" || host == "localhost" || host == "::1"
}

func (s *Server) handler(d dialect) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := d.parse(r, body)
		if err != nil {
			s.record("%s %s: bad request: %v", r.Method, r.URL.Path, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c, step, fault, ok := s.next(req)
		if !ok {
			s.record("%s %s: no conversation matches %q (step %d)", r.Method, r.URL.Path, cutText(req.FirstUser, 80), req.ToolResults)
			d.answer(w, req, Step{Text: "fakemodel: no script for this request"})
			return
		}
		if fault != nil {
			s.record("%s %s: %q step %d: fault %d", r.Method, r.URL.Path, c.Match, req.ToolResults, fault.Status)
			time.Sleep(fault.Delay)
			if fault.Status != 0 {
				for k, v := range fault.Headers {
					w.Header().Set(k, v)
				}
				if fault.Body != "" {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(fault.Status)
					io.WriteString(w, fault.Body)
					return
				}
				d.fail(w, *fault)
				return
			}
		}
		s.record("%s %s: %q step %d", r.Method, r.URL.Path, c.Match, req.ToolResults)
		d.answer(w, req, step)
	})
}

// next finds the conversation and step of a request, and the fault to
// serve first, if any.
func (s *Server) next(req Request) (*conversation, Step, *Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.convs {
		if !strings.Contains(req.FirstUser, c.Match) {
			continue
		}
		k := req.ToolResults
		if k >= len(c.Steps) {
			return c, Step{Text: "fakemodel: the script has no more steps"}, nil, true
		}
		if fs := c.faults[k]; len(fs) > 0 {
			f := fs[0]
			c.faults[k] = fs[1:]
			return c, c.Steps[k], &f, true
		}
		return c, c.Steps[k], nil, true
	}
	return nil, Step{}, nil, false
}

// Shell is a tool call that runs a shell command, in the named tool's own
// argument shape; dialects and tests use it to build steps.
func Shell(tool, command string) *ToolCall {
	return &ToolCall{Name: tool, Input: map[string]any{"command": command}}
}

// sse writes one server-sent event.
func sse(w io.Writer, event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	if event != "" {
		fmt.Fprintf(&buf, "event: %s\n", event)
	}
	fmt.Fprintf(&buf, "data: %s\n\n", b)
	w.Write(buf.Bytes())
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
