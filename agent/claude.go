package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/ralph-harness/ralph/internal/lines"
	"github.com/ralph-harness/ralph/internal/textcut"
)

// maxLine bounds one line of stream-json held for parsing. Claude's events
// are far smaller; a longer line (a tool echoing a huge file, say) is passed
// over rather than held whole.
const maxLine = 1 << 20

// maxSummary bounds the one-line summaries of tool calls and errors.
const maxSummary = 200

// claudeMaxMessages bounds the message ids remembered for counting tokens
// before a result: a message's events come close together, so only the ids
// of the last few matter.
const claudeMaxMessages = 1024

// claudeReader reads `claude -p --output-format stream-json --verbose`: one
// JSON event per line (system/init, assistant messages, user messages that
// carry tool results, system/api_retry while the CLI retries a failed API
// request, rate_limit_event for subscription logins, and a final result).
// It shows a readable view instead of the raw JSON and takes the final
// message, tokens and cost from the result event, and the problem from a
// result that is an API error. The first result ends the run: what follows
// it is shown, and changes nothing of what the run said (another result is
// passed over, see passedOver). Without a result, the tokens are those the
// assistant messages said they used.
type claudeReader struct {
	view
	finalEvent // the first result event
	lines      lines.Splitter
	now        func() time.Time // resolves relative reset times in error messages

	gotResult bool
	final     string
	// said is the text of the model's last turn: its text blocks since
	// its last tool call, each on lines of its own (see fullTurn).
	said      string
	input     int64
	output    int64
	cost      float64
	costKnown bool
	apiError  bool
	// failed: the result says the run did not succeed, by is_error or
	// by an error subtype (ralph's API agent stopped mid-wait says
	// error_during_execution without is_error).
	failed    bool
	errStatus int      // the result's api_error_status (0: none)
	errType   string   // the result's api_error_type
	problem   *Problem // the result's problem, as the run stood at it

	// spentIn and spentOut add up the usage of the assistant messages
	// so far, for a run stopped before its result (a timeout, an idle
	// stop, an interrupt), which is often the costliest; the result's
	// usage replaces them. messages holds, by message id, the counts
	// already added for it (at most claudeMaxMessages ids).
	spentIn, spentOut int64
	messages          map[string]claudeUsage

	// retrying is the problem of the API request the CLI was retrying
	// when it last said so, cleared by any later answer of the model or
	// tool result; it stands when the run ends (stopped, say) without a
	// result or with an error result that names no problem of its own.
	retrying *Problem
	// limitReset is when a rejecting rate_limit_event said the limit
	// lifts (zero: no such event).
	limitReset time.Time
}

func newClaudeReader(shown io.Writer, now func() time.Time) *claudeReader {
	r := &claudeReader{view: view{shown}, now: now, finalEvent: newFinalEvent(), messages: map[string]claudeUsage{}}
	r.lines = lines.Splitter{Max: maxLine, Line: r.line, Long: r.longLine}
	return r
}

func (r *claudeReader) Write(p []byte) (int, error) { return r.lines.Write(p) }

func (r *claudeReader) finish(res *Result) {
	r.lines.Flush()
	if !r.gotResult {
		// No result event (the agent was stopped, or crashed): there is no
		// final message, and nothing else is trusted to be one. An API
		// error the CLI was still retrying is the likely cause.
		if r.retrying != nil {
			p := *r.retrying
			r.withLimitReset(&p)
			res.Problem = &p
		}
		// The tokens the messages used were spent all the same, and
		// loop.max_tokens must see them, short of the truth as they are
		// (see messageUsage). Their cost is not known: only the result
		// prices a run, and a price made up here from the model's name
		// would be wrong for a subscription or after a price change, so
		// it stays unknown rather than guessed.
		res.InputTokens = r.spentIn
		res.OutputTokens = r.spentOut
		return
	}
	res.FinalMessage = lastBytes(r.final, MaxFinalMessage)
	res.InputTokens = r.input
	res.OutputTokens = r.output
	res.CostUSD = r.cost
	res.CostKnown = r.costKnown
	res.APIError = r.apiError
	res.Problem = r.problem
}

// fullTurn is the final message of a result whose text is result, when
// the model's last turn said said. Claude Code's result holds the turn's
// last text block alone: a summary or a "Learning:" line in a block before
// it would be lost, and a claim too when the last block is blank. The
// whole turn is taken when it ends as the result does, which keeps the
// last line, a claim's, the same; the result otherwise.
func fullTurn(result, said string) string {
	end := strings.TrimRight(said, " \t\r\n")
	if end == "" || !strings.HasSuffix(end, strings.TrimSpace(result)) {
		return result
	}
	return said
}

// resultProblem is the problem of a result that is an API error: the kind
// its api_error_status or api_error_type says, else what its message says
// (a low credit balance is a permanent one); nil when neither tells.
func (r *claudeReader) resultProblem() *Problem {
	kind := claudeErrorKind(r.errStatus, r.errType)
	p := classifyAs(r.final, kind, fmt.Sprintf("API error %d %s", r.errStatus, r.errType), r.now())
	if p != nil {
		r.withLimitReset(p)
	}
	return p
}

// withLimitReset gives a rate limit without a reset time the one a
// rate_limit_event announced.
func (r *claudeReader) withLimitReset(p *Problem) {
	if p.Kind == RateLimited && p.ResetAt.IsZero() {
		p.ResetAt = r.limitReset
	}
}

// claudeErrorKind maps the HTTP status and error type of a failed API
// request, as Claude Code reports them, to a problem kind; 0 when they do
// not tell.
func claudeErrorKind(status int, typ string) ProblemKind {
	switch {
	case typ == "billing_error" || status == 402:
		// ralph's own API agent's word for a quota or credit run out,
		// which OpenAI's API tells with a 429.
		return Permanent
	case status == 429 || typ == "rate_limit_error" || typ == "rate_limit":
		return RateLimited
	case status == 401 || status == 403 || typ == "authentication_error" ||
		typ == "authentication_failed" || typ == "permission_error":
		return Permanent
	case status >= 500 || status == 408 || status == 409 || typ == "api_error" ||
		typ == "overloaded_error" || typ == "overloaded" || typ == "server_error":
		// A request timed out or in conflict may pass when sent again, as
		// ralph's API agent sends it; only its type, invalid_request_error
		// (which that agent gives every status it does not name), would
		// say otherwise.
		return Transient
	case status == 400 || status == 404 || typ == "not_found_error":
		// A request the service will never take (max_tokens above the
		// model's, a parameter it does not know, a model it does not
		// have): asked again, it is refused again, and every attempt of
		// every story with it. A 400 by its status, not its type.
		return Permanent
	}
	return 0
}

// line handles one line of stdout, without its newline.
func (r *claudeReader) line(b []byte) {
	ev := r.decode(b)
	if ev == nil {
		return
	}
	switch str(ev["type"]) {
	case "system":
		r.system(ev)
	case "assistant":
		r.assistant(ev)
	case "user":
		r.user(ev)
	case "result":
		if r.gotResult {
			// Not the run's: it ended at its first result. Something it
			// left running, or a tool, printed this one.
			r.passedOver("result")
			return
		}
		r.result(ev)
	case "rate_limit_event":
		r.rateLimit(ev)
	}
	// Other events (partial-message stream events, future types) are not
	// shown: they would only repeat what the complete messages show.
}

func (r *claudeReader) system(ev map[string]json.RawMessage) {
	sub := str(ev["subtype"])
	if sub == "api_retry" {
		r.apiRetry(ev)
		return
	}
	if sub == "init" {
		r.started(str(ev["model"]))
		return
	}
	if sub != "" {
		r.printf("● %s\n", oneLine(sub))
	}
}

// apiRetry shows an API request the CLI failed and is about to retry, e.g.
// {"subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":1070,
// "error_status":429,"error":"rate_limit"}, and keeps its problem in case
// the stream ends before anything else is heard.
func (r *claudeReader) apiRetry(ev map[string]json.RawMessage) {
	var status, attempt, maxRetries int
	var delay float64
	json.Unmarshal(ev["error_status"], &status)
	json.Unmarshal(ev["attempt"], &attempt)
	json.Unmarshal(ev["max_retries"], &maxRetries)
	json.Unmarshal(ev["retry_delay_ms"], &delay)
	what := "API error"
	if status != 0 {
		what += fmt.Sprintf(" %d", status)
	}
	if e := str(ev["error"]); e != "" {
		what = oneLine(what + " " + e)
	}
	retry := "retrying"
	if attempt > 0 && maxRetries > 0 {
		retry += fmt.Sprintf(" (%d of %d)", attempt, maxRetries)
	}
	if delay > 0 && delay < 1e12 {
		retry += " in " + time.Duration(delay*float64(time.Millisecond)).Round(100*time.Millisecond).String()
	}
	r.printf("✗ %s: %s\n", what, retry)
	// The CLI retries what it takes for passing trouble: an error it
	// does not name is transient.
	kind := claudeErrorKind(status, str(ev["error"]))
	if kind == 0 {
		kind = Transient
	}
	r.retrying = &Problem{Kind: kind, Message: what}
}

// rateLimit reads a rate_limit_event, which Claude Code sends to
// subscription logins: {"type":"rate_limit_event","rate_limit_info":
// {"status":"rejected","resetsAt":1771390800,"rateLimitType":"five_hour"}}.
// A rejection is shown and its reset time kept; "allowed" is not news.
func (r *claudeReader) rateLimit(ev map[string]json.RawMessage) {
	var info struct {
		Status   string          `json:"status"`
		ResetsAt json.RawMessage `json:"resetsAt"`
		Type     string          `json:"rateLimitType"`
	}
	if json.Unmarshal(ev["rate_limit_info"], &info) != nil || info.Status == "" || info.Status == "allowed" {
		return
	}
	var reset time.Time
	var at float64
	if json.Unmarshal(info.ResetsAt, &at) == nil && at > 0 && at < 1e15 {
		if at >= 1e12 { // milliseconds
			reset = time.UnixMilli(int64(at))
		} else {
			reset = time.Unix(int64(at), 0)
		}
	}
	line := "rate limit " + oneLine(info.Status)
	if info.Type != "" {
		line += " (" + oneLine(info.Type) + ")"
	}
	if !reset.IsZero() {
		line += ", resets " + reset.UTC().Format(time.RFC3339)
	}
	line = oneLine(line)
	if info.Status == "rejected" {
		r.printf("✗ %s\n", line)
		r.limitReset = reset
		r.retrying = &Problem{Kind: RateLimited, Message: line, ResetAt: reset}
		return
	}
	r.printf("● %s\n", line)
}

// block is one element of a message's content.
type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error"`
}

// blocks returns the content blocks of an event's message, decoded one by
// one; a plain-string content is returned as a single text block.
func blocks(ev map[string]json.RawMessage) []block {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(ev["message"], &msg) != nil {
		return nil
	}
	return contentBlocks(msg.Content)
}

func contentBlocks(raw json.RawMessage) []block {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	// The list is decoded whole; block by block only when a block is of
	// the wrong shape, so that it alone is passed over.
	var bs []block
	if len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &bs) == nil {
		return bs
	}
	var raws []json.RawMessage
	if json.Unmarshal(raw, &raws) != nil {
		return nil
	}
	bs = nil
	for _, rb := range raws {
		var b block
		if json.Unmarshal(rb, &b) == nil {
			bs = append(bs, b)
		}
	}
	return bs
}

func (r *claudeReader) assistant(ev map[string]json.RawMessage) {
	// Decoded once for its usage and its content: a message may be long.
	var msg struct {
		ID      json.RawMessage `json:"id"`
		Usage   json.RawMessage `json:"usage"`
		Content json.RawMessage `json:"content"`
	}
	var content []block
	if json.Unmarshal(ev["message"], &msg) == nil {
		r.messageUsage(str(msg.ID), msg.Usage)
		content = contentBlocks(msg.Content)
	}
	// A message the CLI made up to report a failed API request
	// ("API Error: ...") is an error, not the model's words.
	synthetic := str(ev["error"]) != ""
	if !synthetic {
		r.retrying = nil
	}
	for _, b := range content {
		switch b.Type {
		case "text":
			if b.Text == "" {
				continue
			}
			if synthetic {
				r.printf("✗ %s\n", oneLine(b.Text))
				continue
			}
			r.showText(b.Text)
			if r.said != "" && !strings.HasSuffix(r.said, "\n") {
				r.said += "\n"
			}
			r.said = lastBytes(r.said+b.Text, MaxFinalMessage)
		case "tool_use":
			r.said = ""
			r.printf("%s\n", toolLine(b.Name, toolSummary(b.Input)))
		}
		// Thinking blocks are the agent's own business.
	}
}

// claudeUsage is the tokens a usage object counts: input with the cache's
// reads and writes, and output.
type claudeUsage struct{ input, output int64 }

// decodeClaudeUsage reads a usage object, {"input_tokens",
// "cache_creation_input_tokens", "cache_read_input_tokens",
// "output_tokens"}, as a result and every assistant message carry it. A
// count of the wrong type costs only itself.
func decodeClaudeUsage(raw json.RawMessage) claudeUsage {
	var usage struct {
		Input         int64 `json:"input_tokens"`
		Output        int64 `json:"output_tokens"`
		CacheCreation int64 `json:"cache_creation_input_tokens"`
		CacheRead     int64 `json:"cache_read_input_tokens"`
	}
	json.Unmarshal(raw, &usage)
	return claudeUsage{
		input:  AddTokens(0, usage.Input, usage.CacheCreation, usage.CacheRead),
		output: AddTokens(0, usage.Output),
	}
}

// messageUsage adds an assistant message's usage to the tokens spent so
// far. Claude Code sends a message as one event per content block, each
// with the message's id and the usage known when it was sent (all of the
// input, but little of the output, which the result alone tells in full):
// a message counts once, at the most any of its events said. An event
// without an id is a message of its own.
func (r *claudeReader) messageUsage(id string, usage json.RawMessage) {
	if len(usage) == 0 {
		return
	}
	u := decodeClaudeUsage(usage)
	prev, seen := r.messages[id]
	if id != "" && !seen && len(r.messages) >= claudeMaxMessages {
		// Messages long finished: forgetting them costs at most one
		// counted twice, should an event of it still come.
		clear(r.messages)
	}
	now := claudeUsage{input: max(prev.input, u.input), output: max(prev.output, u.output)}
	r.spentIn = AddTokens(r.spentIn, now.input-prev.input)
	r.spentOut = AddTokens(r.spentOut, now.output-prev.output)
	if id != "" {
		r.messages[id] = now
	}
}

// user shows the tool results that failed; successful ones are too long and
// too many to be worth a line each.
func (r *claudeReader) user(ev map[string]json.RawMessage) {
	for _, b := range blocks(ev) {
		if b.Type != "tool_result" {
			// Not a sign of progress: "[Request interrupted by user]",
			// say, while the CLI was still retrying.
			continue
		}
		r.retrying = nil
		if !b.IsError {
			continue
		}
		var text string
		for _, c := range contentBlocks(b.Content) {
			if c.Type == "text" && c.Text != "" {
				text = c.Text
				break
			}
		}
		r.printf("  ✗ %s\n", oneLine(firstLine(text)))
	}
}

func (r *claudeReader) result(ev map[string]json.RawMessage) {
	r.end()
	r.gotResult = true
	r.final = str(ev["result"])
	r.apiError = false
	json.Unmarshal(ev["is_error"], &r.apiError)
	r.errStatus = 0
	json.Unmarshal(ev["api_error_status"], &r.errStatus)
	r.errType = str(ev["api_error_type"])
	if !r.apiError {
		r.final = fullTurn(r.final, r.said)
	}
	// The result's usage is the whole run's, which the messages' fall
	// short of: it replaces theirs.
	u := decodeClaudeUsage(ev["usage"])
	r.input, r.output = u.input, u.output
	var cost *float64
	if json.Unmarshal(ev["total_cost_usd"], &cost) != nil || cost != nil && (*cost < 0 || math.IsInf(*cost, 0) || math.IsNaN(*cost)) {
		cost = nil
	}
	r.costKnown = cost != nil
	r.cost = 0
	if cost != nil {
		r.cost = *cost
	}

	// A run that ended on an error (error_max_turns, error_during_execution)
	// is no success, whether or not it says is_error.
	sub := str(ev["subtype"])
	r.failed = r.apiError || strings.HasPrefix(sub, "error")
	// Its problem is taken now: what comes after the result (an
	// api_retry, a rate_limit_event) is not the run's.
	if r.apiError {
		r.problem = r.resultProblem()
	}
	if r.problem == nil && r.failed && r.retrying != nil {
		// A failed run whose result names no problem of its own, as
		// ralph's API agent stopped while it waited to retry says it,
		// failed on the request it was retrying.
		p := *r.retrying
		r.withLimitReset(&p)
		r.problem = &p
	}
	var line strings.Builder
	if r.failed {
		line.WriteString("✗ result")
	} else {
		line.WriteString("✓ result")
	}
	if sub != "" && sub != "success" {
		fmt.Fprintf(&line, " (%s)", oneLine(sub))
	}
	var parts []string
	var turns int64
	if json.Unmarshal(ev["num_turns"], &turns) == nil {
		if turns == 1 {
			parts = append(parts, "1 turn")
		} else {
			parts = append(parts, fmt.Sprintf("%d turns", turns))
		}
	}
	if r.costKnown {
		parts = append(parts, fmt.Sprintf("$%.4f", r.cost))
	}
	if len(parts) > 0 {
		line.WriteString(": " + strings.Join(parts, ", "))
	}
	if r.apiError && r.final != "" {
		line.WriteString(" — " + oneLine(firstLine(r.final)))
	}
	r.printf("%s\n", line.String())
}

// summaryKeys are the tool input fields that say best what a call does, most
// telling first: Bash's command, the file of Read/Edit/Write, Grep's and
// Glob's pattern, WebFetch's url, Task's description.
var summaryKeys = []string{"command", "file_path", "notebook_path", "pattern", "path", "url", "query", "description", "prompt"}

// toolSummary renders a tool call's input on one line.
func toolSummary(input json.RawMessage) string {
	if len(input) == 0 {
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) == nil {
		for _, k := range summaryKeys {
			if s := str(fields[k]); s != "" {
				return oneLine(s)
			}
		}
		if len(fields) == 0 {
			return ""
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, input) != nil {
		return oneLine(string(input))
	}
	return oneLine(compact.String())
}

// str decodes a JSON string, or returns "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimLeft(s, " \t\r\n")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// oneLine collapses whitespace (newlines included) to single spaces and cuts
// the result to maxSummary bytes, so a summary stays on one terminal line.
func oneLine(s string) string { return textcut.OneLine(s, maxSummary) }

// lastBytes returns the last n bytes of s at most, starting on a rune
// boundary.
func lastBytes(s string, n int) string { return textcut.Tail(s, n) }
