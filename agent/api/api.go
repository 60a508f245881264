// Package api is ralph's built-in coding agent. One run is one fresh
// conversation with a model behind an HTTP API — the Anthropic Messages API,
// or the OpenAI Chat Completions API as OpenAI and the OpenAI-compatible
// servers (Ollama, vLLM, llama.cpp, OpenRouter, LiteLLM) speak it — in which
// the model works in a directory through a handful of tools until it stops
// calling them.
//
// The run prints what happens as Claude Code's stream-json (system/init,
// assistant and user messages, a final result with the reply, the tokens,
// the cost and any API error), so that ralph runs it as a process and reads
// it like any agent's output.
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/ralph-harness/ralph/internal/textcut"
)

// The APIs the agent speaks.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
)

// Defaults for the options a caller leaves zero, and the retries ralph's
// api-agent asks for (zero Retries means none).
const (
	DefaultMaxTurns        = 50
	DefaultMaxOutputTokens = 8192
	DefaultRetries         = 3
	DefaultBackoff         = time.Second
	DefaultMaxWait         = time.Minute
)

// DefaultBaseURL returns the public endpoint of an API, written the way the
// providers' own SDKs take it.
func DefaultBaseURL(api string) string {
	switch api {
	case Anthropic:
		return "https://api.anthropic.com"
	case OpenAI:
		return "https://api.openai.com/v1"
	}
	return ""
}

// DefaultKeyEnv returns the variable that holds an API's key by default.
func DefaultKeyEnv(api string) string {
	switch api {
	case Anthropic:
		return "ANTHROPIC_API_KEY"
	case OpenAI:
		return "OPENAI_API_KEY"
	}
	return ""
}

// Options describe one run of the agent.
type Options struct {
	API     string // Anthropic or OpenAI
	Model   string
	BaseURL string // "" for the API's public endpoint
	// KeyEnv names the variable Key came from, for messages; the key
	// itself never appears in a message.
	KeyEnv string
	Key    string
	// MaxTurns bounds the model's replies in one run; MaxOutputTokens
	// bounds each reply.
	MaxTurns        int
	MaxOutputTokens int
	// PriceInput and PriceOutput are USD per million input and output
	// tokens, for a provider that reports no cost; both zero: the cost is
	// unknown unless the provider reports it.
	PriceInput  float64
	PriceOutput float64

	Dir    string // the work directory: the tools' whole world
	Prompt string // the user message

	Out    io.Writer    // the stream-json
	Client *http.Client // nil: a client with no time limit of its own (ralph's timeouts for the agent apply)

	// Retries bounds the retries of a failed request (a server error, a
	// dropped stream, a rate limit that lifts soon enough); Backoff is the
	// first wait, doubled each time; MaxWait is the longest wait the run
	// takes itself: a rate limit that lifts later ends the run with the
	// time it lifts, for ralph to wait out. Zero Retries means none.
	Retries int
	Backoff time.Duration
	MaxWait time.Duration
	// Sleep waits d unless ctx ends first; nil: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
	// ShellTimeout is the default and MaxShellTimeout the longest time a
	// shell command may take; zero: 2 and 10 minutes.
	ShellTimeout    time.Duration
	MaxShellTimeout time.Duration
}

func (o *Options) defaults() {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL(o.API)
	}
	if o.KeyEnv == "" {
		o.KeyEnv = DefaultKeyEnv(o.API)
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = DefaultMaxTurns
	}
	if o.MaxOutputTokens <= 0 {
		o.MaxOutputTokens = DefaultMaxOutputTokens
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ErrInterrupted is returned by Run when ctx ended the run.
var ErrInterrupted = errors.New("interrupted")

// Run holds one conversation and returns the agent's exit status: 0 when
// the model finished, 1 when the run failed (an API error, max turns). Every
// outcome is in the stream-json's result event. Run returns an error only
// when ctx ended the run (ErrInterrupted) or the options are unusable.
func Run(ctx context.Context, o Options) (int, error) {
	o.defaults()
	var p provider
	switch o.API {
	case Anthropic:
		p = newAnthropic(o)
	case OpenAI:
		p = newOpenAI(o)
	default:
		return 1, fmt.Errorf("api %q: want %q or %q", o.API, Anthropic, OpenAI)
	}
	ts, err := newTools(o.Dir, o.ShellTimeout, o.MaxShellTimeout, o.KeyEnv)
	if err != nil {
		return 1, err
	}
	r := &run{o: o, p: p, tools: ts, out: newStreamWriter(o.Out, o.Model, o.Now)}
	return r.run(ctx)
}

// provider is one API's wire format; send does the round trip.
type provider interface {
	// endpoint is the URL requests go to.
	endpoint() string
	// request encodes the conversation as a request's body, with the
	// headers the API wants besides the content type.
	request(conv []message) (body []byte, header http.Header, err error)
	// stream reads a reply the server streams, whole one it sends in one
	// piece; both give its text to s as it comes. When stream fails, its
	// reply holds what the server reported of the request's usage and
	// cost before the stream broke off (see partial), and nothing else.
	stream(body io.Reader, s sink) (reply, error)
	whole(body io.Reader, s sink) (reply, error)
}

// message is one message of a conversation, in no API's shape.
type message struct {
	Role    string // "user" or "assistant"
	Text    string
	Calls   []toolCall   // the assistant's tool calls
	Results []toolResult // the user's answers to them
}

// toolCall is a tool call as the model made it.
type toolCall struct {
	ID   string
	Name string
	// Args is the arguments as the model sent them: JSON text, which may
	// be broken.
	Args string
}

// toolResult answers one tool call.
type toolResult struct {
	CallID  string
	Name    string
	Content string
	IsError bool
}

// reply is one answer of the model.
type reply struct {
	ID    string
	Text  string
	Calls []toolCall
	Usage usage
	// Cost is what the provider said the request cost in USD; nil when
	// it did not say.
	Cost *float64
	Stop string // why the model stopped, in the API's words
}

// partial is what counts of a reply that broke off: the usage and cost the
// server reported before it did. A request the run gives up on (an
// interrupt, agent.timeout) is billed as far as it went.
func partial(rep reply) reply {
	return reply{Usage: rep.Usage, Cost: rep.Cost}
}

// reported reports whether the server said anything of the reply's usage
// or cost.
func (rep reply) reported() bool {
	return rep.Usage != (usage{}) || rep.Cost != nil
}

// usage counts one request's tokens. Input excludes the cached tokens.
type usage struct {
	Input         int64
	Output        int64
	CacheCreation int64
	CacheRead     int64
}

func (u *usage) add(v usage) {
	u.Input += v.Input
	u.Output += v.Output
	u.CacheCreation += v.CacheCreation
	u.CacheRead += v.CacheRead
}

// sink receives a reply while it streams in.
type sink interface {
	// text is a piece of the reply's text.
	text(s string)
	// endText ends a run of text (a content block).
	endText()
	// alive says that the server sent something.
	alive()
}

// systemPrompt is the fixed system prompt of every run: the rendered
// prompt, as the first user message, says what to do.
const systemPrompt = `You are a coding agent working unattended in a project directory. Do the task the user message gives you, completely, using the tools:
- shell runs a command with sh -c in the project directory (tests, builds, git, anything); its output is cut when it is long.
- read_file, write_file and edit_file read and change files; list_files and search find them. Paths are relative to the project directory, and nothing outside it can be reached with them.
Work in small verified steps: read before you change, run the project's checks after you change. Nobody will answer questions during the run, so decide for yourself; when you cannot go on without a person, say so as the user message asks. When you are finished, stop calling tools and write your final message exactly as the user message asks.`

// run is one run of the agent.
type run struct {
	o     Options
	p     provider
	tools *tools
	out   *streamWriter

	turns     int
	usage     usage
	cost      float64
	costKnown bool
}

func (r *run) run(ctx context.Context) (int, error) {
	start := r.o.Now()
	r.out.init(r.tools.root, toolNames())
	r.costKnown = true
	if r.o.Key == "" && NeedsKey(r.o.API, r.o.BaseURL) {
		r.out.result(resultEvent{
			Subtype: "error_during_execution", IsError: true, ErrorType: "authentication_error",
			Text:     KeyMissing(r.o.API, r.o.KeyEnv),
			Duration: r.o.Now().Sub(start),
		})
		return 1, nil
	}
	if msg := KeyUnusable(r.o.Key, r.o.KeyEnv); msg != "" {
		// Refused by net/http before it is sent, such a key failed every
		// request as a network error: retried, then blamed on base_url.
		r.out.result(resultEvent{
			Subtype: "error_during_execution", IsError: true, ErrorType: "authentication_error",
			Text:     msg,
			Duration: r.o.Now().Sub(start),
		})
		return 1, nil
	}
	conv := []message{{Role: "user", Text: r.o.Prompt}}
	for {
		rep, err := r.request(ctx, conv)
		if err != nil {
			if ctx.Err() != nil {
				return r.interrupted(start)
			}
			r.fail(err, start)
			return 1, nil
		}
		r.turns++
		r.account(rep)
		conv = append(conv, message{Role: "assistant", Text: rep.Text, Calls: rep.Calls})
		for _, c := range rep.Calls {
			r.out.toolUse(rep.ID, c)
		}
		if len(rep.Calls) == 0 {
			r.out.result(r.resultEvent("success", false, rep.Text, start))
			return 0, nil
		}
		results := make([]toolResult, 0, len(rep.Calls))
		for _, c := range rep.Calls {
			res := r.tools.call(ctx, c)
			if ctx.Err() != nil {
				return r.interrupted(start)
			}
			if _, err := objectArgs(c.Args); err != nil && (rep.Stop == "max_tokens" || rep.Stop == "length") {
				res.Content += fmt.Sprintf(" (your reply was cut off at agent.max_output_tokens = %d tokens: send less in one call, e.g. write a long file in parts)", r.o.MaxOutputTokens)
			}
			results = append(results, res)
		}
		r.out.toolResults(results)
		conv = append(conv, message{Role: "user", Results: results})
		if r.turns >= r.o.MaxTurns {
			// The tools have run, so their work stands; the model gets
			// no further turn.
			text := strings.TrimSpace(rep.Text + fmt.Sprintf("\n\n[ralph api agent: stopped after agent.max_turns = %d replies]", r.o.MaxTurns))
			r.out.result(r.resultEvent("error_max_turns", false, text, start))
			return 1, nil
		}
	}
}

// interrupted ends a run that ctx stopped (ralph's stop on agent.timeout,
// agent.idle_timeout or an interrupt is a SIGINT) with a result that holds
// the tokens and cost spent so far: ralph counts them against
// loop.max_tokens and loop.max_cost_usd whether or not the run finished.
// The result has no text: a stopped run has no final message.
func (r *run) interrupted(start time.Time) (int, error) {
	r.out.result(r.resultEvent("error_during_execution", false, "", start))
	return 1, ErrInterrupted
}

// request sends the conversation and retries what may pass: a server
// error, a dropped stream, a rate limit that lifts within MaxWait. What the
// server reported of the usage of an attempt that broke off, ctx's end
// included, is counted here (see account).
func (r *run) request(ctx context.Context, conv []message) (reply, error) {
	for attempt := 1; ; attempt++ {
		text := &textSink{out: r.out}
		rep, err := send(ctx, &r.o, r.p, conv, text)
		text.endText()
		if err == nil {
			rep.ID = text.id(rep.ID)
			return rep, nil
		}
		// A stream cut off was billed as far as it went: what the server
		// reported of it counts, whether it is tried again or not.
		if p := partial(rep); p.reported() {
			r.account(p)
		}
		if ctx.Err() != nil {
			return reply{}, ctx.Err()
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{Network: true, Message: err.Error()}
		}
		if !ae.retryable() || attempt > r.o.Retries {
			ae.attempts = attempt
			return reply{}, ae
		}
		wait := r.o.Backoff << (attempt - 1)
		if d := ae.wait(r.o.Now()); d > 0 {
			wait = d
		}
		if wait > r.o.MaxWait {
			if ae.Status == http.StatusTooManyRequests || ae.hinted() {
				// Longer than a run should sit idle: ralph waits
				// instead, knowing when.
				ae.attempts = attempt
				return reply{}, ae
			}
			wait = r.o.MaxWait
		}
		r.out.apiRetry(attempt, r.o.Retries, wait, ae)
		if err := r.wait(ctx, wait); err != nil {
			return reply{}, err
		}
	}
}

// wait sleeps d before a request is sent again, printing a keep-alive
// every keepAlive meanwhile: silent, a wait of up to MaxWait outlasts a
// short agent.idle_timeout, and ralph would stop a run that only waits as
// the server asked (Claude Code prints nothing while it waits, but its
// waits are seconds long).
func (r *run) wait(ctx context.Context, d time.Duration) error {
	for {
		step := min(d, keepAlive)
		if err := r.o.Sleep(ctx, step); err != nil {
			return err
		}
		if d -= step; d <= 0 {
			return nil
		}
		r.out.ping()
	}
}

// account adds a reply's tokens and cost to the run's.
func (r *run) account(rep reply) {
	r.usage.add(rep.Usage)
	switch {
	case rep.Cost != nil:
		r.cost += *rep.Cost
	case r.o.PriceInput > 0 || r.o.PriceOutput > 0:
		r.cost += priced(r.o.API, rep.Usage, r.o.PriceInput, r.o.PriceOutput)
	default:
		r.costKnown = false
	}
}

// priced is the cost of a request's tokens at the given prices per million
// tokens. Anthropic bills writing the prompt cache at 1.25 times and
// reading it at 0.1 times the input price; OpenAI-compatible servers report
// cached tokens without one price for them all, so they count as input.
func priced(api string, u usage, in, out float64) float64 {
	input := float64(u.Input + u.CacheCreation + u.CacheRead)
	if api == Anthropic {
		input = float64(u.Input) + 1.25*float64(u.CacheCreation) + 0.1*float64(u.CacheRead)
	}
	return (input*in + float64(u.Output)*out) / 1e6
}

func (r *run) resultEvent(subtype string, isError bool, text string, start time.Time) resultEvent {
	ev := resultEvent{
		Subtype: subtype, IsError: isError, Text: text, Turns: r.turns,
		Usage: r.usage, Duration: r.o.Now().Sub(start),
	}
	if r.costKnown {
		ev.Cost = &r.cost
	}
	return ev
}

// fail ends the run with the error of its last request.
func (r *run) fail(err error, start time.Time) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Network: true, Message: err.Error()}
	}
	ev := r.resultEvent("error_during_execution", true, r.describe(ae), start)
	ev.Status = ae.Status
	ev.ErrorType = ae.kind()
	r.out.result(ev)
}

// describe says on one line what went wrong and what to do about it; the
// line is what ralph records and, for a problem it stops on, prints.
func (r *run) describe(ae *apiError) string {
	var b strings.Builder // the hint; the error's words go before it
	now := r.o.Now()
	switch {
	case ae.billing():
		b.WriteString(" · the account's quota or credit ran out: see its plan and billing")
	case ae.Status == http.StatusUnauthorized:
		fmt.Fprintf(&b, " · check the key in %s (agent.api_key_env)", r.o.KeyEnv)
	case ae.Status == http.StatusForbidden:
		fmt.Fprintf(&b, " · check the key in %s (agent.api_key_env) and its access to agent.model = %q", r.o.KeyEnv, r.o.Model)
	case ae.Status == http.StatusNotFound:
		fmt.Fprintf(&b, " · check agent.model = %q and agent.base_url = %q (ralph sends to %s)", r.o.Model, redacted(r.o.BaseURL), redacted(r.p.endpoint()))
	case ae.Status == http.StatusTooManyRequests:
		if reset := ae.resetAt(now); !reset.IsZero() {
			fmt.Fprintf(&b, " · the limit resets at %s", reset.UTC().Format(time.RFC3339))
		}
	case ae.Network:
		fmt.Fprintf(&b, " · gave up after %d attempts; is agent.base_url = %q reachable?", ae.attempts, redacted(r.o.BaseURL))
	case ae.retryable():
		fmt.Fprintf(&b, " · gave up after %d attempts", ae.attempts)
		if reset := ae.resetAt(now); !reset.IsZero() {
			fmt.Fprintf(&b, "; the server asked to wait until %s", reset.UTC().Format(time.RFC3339))
		}
	}
	// A long error body is cut, not the hint: what to fix is the point.
	hint := b.String()
	return textcut.OneLine(ae.Error(), max(maxSummary-len(hint), 40)) + hint
}

// redacted is a URL as messages show it: a password in it
// (http://user:pass@host) is xxxxx, as net/http's own errors hide it.
func redacted(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	return u.Redacted()
}

// NeedsKey reports whether the API agent of api cannot run at baseURL
// without a key: a provider's public endpoint always needs one, a local
// OpenAI-compatible server may not.
func NeedsKey(api, baseURL string) bool {
	return !(api == OpenAI && baseURL != DefaultBaseURL(OpenAI))
}

// KeyMissing says that keyEnv, which is to hold the key of api, is not set,
// and what to do.
func KeyMissing(api, keyEnv string) string {
	return fmt.Sprintf("%s is not set (agent.api_key_env): put your %s API key in it, or name the variable that holds it with agent.api_key_env",
		keyEnv, providerName(api))
}

// KeyUnusable says what is wrong with a key that cannot go into a request
// header, naming keyEnv and never the key; "" for a key that can. No key
// has a control character: one is a line ending left in it by the file it
// was read from, such as a .env file with Windows line endings.
func KeyUnusable(key, keyEnv string) string {
	if strings.IndexFunc(key, unicode.IsControl) < 0 {
		return ""
	}
	return fmt.Sprintf("%s holds a control character (agent.api_key_env), which no API key has: set it to the key alone (a \\r or \\n at its end is the line ending of the file it was read from)", keyEnv)
}

func providerName(api string) string {
	if api == Anthropic {
		return "Anthropic"
	}
	return "OpenAI"
}
