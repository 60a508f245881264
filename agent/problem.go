package agent

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-harness/ralph/internal/lazyre"
)

// ProblemKind says what the loop should do about a failed agent run.
type ProblemKind int

const (
	// RateLimited: wait (until the reset time when one is known) and run
	// the iteration again; the wait is not a failed attempt.
	RateLimited ProblemKind = iota + 1
	// Transient: a server or network error; retry with backoff, a bounded
	// number of times.
	Transient
	// Permanent: authentication, an unknown model, bad usage; retrying
	// cannot help, so the loop stops and says what to fix.
	Permanent
)

// String names the kind for messages.
func (k ProblemKind) String() string {
	switch k {
	case RateLimited:
		return "rate limit"
	case Transient:
		return "transient error"
	case Permanent:
		return "permanent error"
	}
	return "problem"
}

// Problem is a failure of the agent's model or service, as opposed to a
// failure of the work: the loop acts on it instead of judging the iteration.
type Problem struct {
	Kind    ProblemKind
	Message string    // the line that told, cut to one line
	ResetAt time.Time // when a rate limit lifts, or a server down said to come back; zero if not said
}

// The patterns are compiled when first needed, not when ralph starts:
// every command would pay for them, and most never classify anything.
//
// Money runs out for good, not for an hour: a quota the account's plan or
// credit ran out of is permanent, and comes before the rate limits, whose
// words it shares. "Exceeded your current quota … plan and billing" is
// OpenAI's word for that, and Gemini's for its per-minute and per-day
// limits too, which say so (RESOURCE_EXHAUSTED, a link to its rate
// limits, a delay to retry after): such a text is a rate limit.
var (
	billingRE   = lazyre.New(`(?i)insufficient[_ ]quota|credit balance is too low|out of credits|\bpayment required\b`)
	quotaRE     = lazyre.New(`(?i)exceeded your current quota|plan and billing`)
	rateHintRE  = lazyre.New(`(?i)resource[_ ]exhausted|rate[ _-]?limits?\b|retry ?delay|retry in|try again`)
	rateLimitRE = lazyre.New(`(?i)\b429\b|rate[ _-]?limit|too many requests|usage limit|quota (?:exceeded|exhausted)|resource[ _]exhausted|limit reached|hit your (?:usage )?limit|resource has been exhausted|exhausted your [^\n]{0,30}quota`)
	transientRE = lazyre.New(`(?i)\b(?:500|502|503|504|529)\b|overloaded|internal server error|bad gateway|service unavailable|gateway time-?out|econnreset|econnrefused|etimedout|enotfound|socket hang up|fetch failed|network error|connection (?:reset|refused)|stream (?:disconnected|error)|high demand|temporary errors`)
	permanentRE = lazyre.New(`(?i)\b(?:401|403)\b|invalid (?:x-)?api[ _-]?key|api key not valid|authentication[ _](?:error|failed)|unauthori[sz]ed|not logged in|please (?:log ?in|login|run /login)|model[^\n]{0,40}(?:not found|does not exist|not supported)|unknown model|invalid model|not_found_error|permission_error|unknown (?:option|argument|flag)|unexpected argument|cannot be used with root|missing environment variable|must specify the \w*api_key|set an auth method`)
	// noiseRE is what is read past: where a crash's stack points
	// (index.js:429:17, "line 500, in f"), whose numbers are no HTTP
	// statuses, and a context window that is full (Claude Code's "Context
	// limit reached"), which is no limit to wait out.
	noiseRE = lazyre.New(`(?i)[\w./@-]+\.\w+:\d+(?::\d+)?|\bline \d+, in\b|context (?:window |length )?(?:limit )?(?:reached|exceeded|is full)`)
)

// classifyAs is Classify for a failure whose kind the CLI reported (by an
// HTTP status, say; 0 when it did not): that kind beats what the words of
// text suggest. fallback is the message when text has no first line.
func classifyAs(text string, kind ProblemKind, fallback string, now time.Time) *Problem {
	p := Classify(text, now)
	if kind == 0 || (p != nil && p.Kind == kind) {
		return p
	}
	msg := oneLine(firstLine(text))
	if msg == "" {
		msg = oneLine(fallback)
	}
	p = &Problem{Kind: kind, Message: msg}
	if kind != Permanent {
		p.ResetAt = resetTime(text, now)
	}
	return p
}

// Classify reads an agent's error text (its stderr, or an error event's
// message) for a rate limit, a transient error or a permanent one. It
// returns nil when the text says none of these. now resolves relative
// reset times ("try again in 2 hours", "resets 3pm").
func Classify(text string, now time.Time) *Problem {
	// Matched with the noise blanked out, so that offsets into words are
	// offsets into text: the message is text's line.
	words := noiseRE().ReplaceAllStringFunc(text, func(m string) string { return strings.Repeat(" ", len(m)) })
	billing := billingRE()
	if quotaRE().MatchString(words) && !rateHintRE().MatchString(words) {
		billing = quotaRE()
	}
	for _, c := range []struct {
		re   *regexp.Regexp
		kind ProblemKind
	}{
		// A rate limit's message often says "429" and "error" both: the
		// most specific kind wins.
		{billing, Permanent},
		{rateLimitRE(), RateLimited},
		{permanentRE(), Permanent},
		{transientRE(), Transient},
	} {
		loc := c.re.FindStringIndex(words)
		if loc == nil {
			continue
		}
		// A server down for maintenance may say until when, as a rate
		// limit does.
		p := &Problem{Kind: c.kind, Message: lineAround(text, loc[0])}
		if c.kind != Permanent {
			p.ResetAt = resetTime(text, now)
		}
		return p
	}
	return nil
}

// lineAround returns the line of text holding offset i, cut to one line.
func lineAround(text string, i int) string {
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := strings.IndexByte(text[i:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += i
	}
	return oneLine(strings.TrimSpace(text[start:end]))
}

var (
	// Claude Code's "Claude AI usage limit reached|1751234400".
	epochRE = lazyre.New(`limit reached\|(\d{9,11})`)
	// "try again in 2 hours 5 minutes", "retry after 30 seconds",
	// "resets in 1h30m", "retry-after: 12".
	inRE = lazyre.New(`(?i)(?:in|after)[: ]\s*((?:\d+(?:\.\d+)?\s*(?:h(?:ours?|rs?)?|m(?:in(?:ute)?s?)?|s(?:ec(?:ond)?s?)?)\b[ ,]*(?:and )?)+)`)
	// "resets at 3pm", "resets 3:30 PM", "try again at 15:00"; a bare
	// number ("retry 2 of 5") is no time (see clockTime).
	atRE = lazyre.New(`(?i)(?:resets?|again|retry)( at)? (\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b`)
	// Codex's reset on another day: "try again at Nov 23rd, 2026 3:05 AM".
	dateRE = lazyre.New(`(?i)\bat ([a-z]{3})[a-z]* (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) (\d{1,2}):(\d{2}) ?(am|pm)`)
	// An RFC 3339 time, as some CLIs print the reset.
	stampRE  = lazyre.New(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})`)
	amountRE = lazyre.New(`(?i)(\d+(?:\.\d+)?)\s*(h|m|s)`)
)

// resetTime finds when a rate limit lifts, from the forms agents print;
// zero when the text does not say.
func resetTime(text string, now time.Time) time.Time {
	if m := epochRE().FindStringSubmatch(text); m != nil {
		if sec, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return time.Unix(sec, 0)
		}
	}
	if m := stampRE().FindString(text); m != "" {
		if t, err := time.Parse(time.RFC3339Nano, m); err == nil {
			return t
		}
	}
	if m := inRE().FindStringSubmatch(text); m != nil {
		var d time.Duration
		for _, a := range amountRE().FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.ParseFloat(a[1], 64)
			unit := map[string]time.Duration{"h": time.Hour, "m": time.Minute, "s": time.Second}[strings.ToLower(a[2])]
			d += time.Duration(n * float64(unit))
		}
		if d > 0 {
			return now.Add(d)
		}
	}
	if m := dateRE().FindStringSubmatch(text); m != nil {
		if month, err := time.Parse("Jan", strings.ToUpper(m[1][:1])+strings.ToLower(m[1][1:])); err == nil {
			day, _ := strconv.Atoi(m[2])
			year, _ := strconv.Atoi(m[3])
			if hour, minute, ok := clockTime(m[4], m[5], m[6]); ok && day >= 1 && day <= 31 {
				return time.Date(year, month.Month(), day, hour, minute, 0, 0, now.Location())
			}
		}
	}
	for _, m := range atRE().FindAllStringSubmatch(text, -1) {
		if m[1] == "" && m[3] == "" && m[4] == "" {
			continue // "retry 2 of 5", "again 1 minute later"
		}
		hour, minute, ok := clockTime(m[2], m[3], m[4])
		if !ok {
			return time.Time{}
		}
		local := now.Local()
		t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, local.Location())
		if !t.After(now) {
			t = t.Add(24 * time.Hour)
		}
		return t
	}
	return time.Time{}
}

// clockTime reads a time of day from its hour, minute ("" for none) and
// am or pm ("" for a 24-hour clock); ok is false for no such time.
func clockTime(h, m, ampm string) (hour, minute int, ok bool) {
	hour, _ = strconv.Atoi(h)
	minute, _ = strconv.Atoi(m)
	switch strings.ToLower(ampm) {
	case "pm":
		if hour < 12 {
			hour += 12
		}
	case "am":
		if hour == 12 {
			hour = 0
		}
	}
	return hour, minute, hour <= 23 && minute <= 59
}
