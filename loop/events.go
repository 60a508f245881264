package loop

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Event is one thing the loop did. `ralph loop --json` prints each as a
// line of JSON on stdout; otherwise it is narrated as text. The schema is
// documented in the README; fields are omitted when they do not apply.
type Event struct {
	Event        string     `json:"event"`
	Time         time.Time  `json:"time"`
	Iteration    int        `json:"iteration,omitempty"`
	Story        string     `json:"story,omitempty"`
	Title        string     `json:"title,omitempty"`
	Attempt      int        `json:"attempt,omitempty"`
	MaxAttempts  int        `json:"maxAttempts,omitempty"`
	ExitCode     *int       `json:"exitCode,omitempty"`
	Seconds      *float64   `json:"seconds,omitempty"`
	Claim        string     `json:"claim,omitempty"`
	Note         string     `json:"note,omitempty"`
	Check        string     `json:"check,omitempty"`
	Passed       *bool      `json:"passed,omitempty"`
	Known        bool       `json:"known,omitempty"`
	Status       string     `json:"status,omitempty"`
	Excerpt      string     `json:"excerpt,omitempty"`
	Outcome      string     `json:"outcome,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	Commit       string     `json:"commit,omitempty"`
	InputTokens  int64      `json:"inputTokens,omitempty"`
	OutputTokens int64      `json:"outputTokens,omitempty"`
	CostUSD      *float64   `json:"costUSD,omitempty"`
	Until        *time.Time `json:"until,omitempty"`
	Message      string     `json:"message,omitempty"`
	Stories      *int       `json:"stories,omitempty"`
	Tokens       int64      `json:"tokens,omitempty"`
	Passing      *int       `json:"passing,omitempty"`
}

// The events, in the order a run emits them.
const (
	EventLoopStarted      = "loop.started"
	EventIterationStarted = "iteration.started"
	EventAgentFinished    = "agent.finished"
	EventCheckFinished    = "check.finished"
	EventIterationJudged  = "iteration.judged"
	EventCommitted        = "iteration.committed"
	EventWaiting          = "waiting"
	EventReloaded         = "harness.reloaded"
	EventWarning          = "warning"
	EventAllPass          = "loop.done"
	EventLoopStopped      = "loop.stopped"
)

// emit prints an event: a JSON line with --json, else its narration, with
// warnings and waits on stderr.
func (o *Options) emit(ev Event) {
	ev.Time = o.now().UTC()
	r := o.secrets()
	for _, text := range []*string{&ev.Message, &ev.Note, &ev.Reason, &ev.Excerpt, &ev.Story, &ev.Title, &ev.Check, &ev.Commit} {
		*text = r.String(*text)
	}
	if o.OnEvent != nil {
		o.OnEvent(ev)
	}
	if o.JSON {
		if o.Out == nil {
			return
		}
		// One line each, without HTML escaping, as ralph's other --json
		// output (package main's printJSON).
		// An Event always marshals; a failing Out is not the loop's to stop
		// (`ralph loop` says at its end that its output was lost).
		enc := json.NewEncoder(o.Out)
		enc.SetEscapeHTML(false)
		enc.Encode(ev)
		return
	}
	switch ev.Event {
	case EventWarning:
		fmt.Fprintf(o.Err, "ralph: warning: %s\n", ev.Message)
	case EventWaiting:
		fmt.Fprintf(o.Err, "ralph: %s\n", ev.Message)
	default:
		if o.Out == nil || ev.Message == "" {
			return
		}
		fmt.Fprintf(o.Out, "[ralph] %s\n", ev.Message)
		if ev.Excerpt != "" && !o.Quiet {
			for _, line := range strings.Split(ev.Excerpt, "\n") {
				fmt.Fprintf(o.Out, "        | %s\n", line)
			}
		}
	}
}

func (o *Options) warn(format string, args ...any) {
	o.emit(Event{Event: EventWarning, Message: fmt.Sprintf(format, args...)})
}

// warnOnce warns as warn does, but once per run for each message: a
// failure that comes back at every iteration (a watch the system's limits
// refuse, say) is said the first time only.
func (o *Options) warnOnce(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if o.said[msg] {
		return
	}
	if o.said == nil {
		o.said = map[string]bool{}
	}
	o.said[msg] = true
	o.warn("%s", msg)
}

func ptr[T any](v T) *T { return &v }
