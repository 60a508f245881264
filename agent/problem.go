package agent

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-harness/ralph/internal/lazyre"
	"github.com/ralph-harness/ralph/internal/retryafter"
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
// Claude Code names the limit it hit: "You've hit your session limit",
// "weekly limit", "Opus limit".
var (
	billingRE   = lazyre.New(`(?i)insufficient[_ ]quota|credit balance is too low|out of credits|\bpayment required\b`)
	quotaRE     = lazyre.New(`(?i)exceeded your current quota|plan and billing`)
	rateHintRE  = lazyre.New(`(?i)resource[_ ]exhausted|rate[ _-]?limits?\b|retry ?delay|retry in|try again`)
	rateLimitRE = lazyre.New(`(?i)\b429\b|rate[ _-]?limit|too many requests|usage limit|quota (?:exceeded|exhausted)|resource[ _]exhausted|limit reached|hit your (?:(?:usage|session|weekly|daily|monthly|opus|sonnet|\d+-hour) )?limit|resource has been exhausted|exhausted your [^\n]{0,30}quota`)
	transientRE = lazyre.New(`(?i)\b(?:500|502|503|504|529)\b|overloaded|internal server error|bad gateway|service unavailable|gateway time-?out|econnreset|econnrefused|etimedout|enotfound|socket hang up|fetch failed|network error|connection (?:reset|refused)|stream (?:disconnected|error)|high demand|temporary errors|other side closed|und_err_socket|api error: terminated`)
	permanentRE = lazyre.New(`(?i)\b(?:401|403)\b|invalid (?:x-)?api[ _-]?key|api key not valid|authentication[ _](?:error|failed)|unauthori[sz]ed|not logged in|please (?:log ?in|login|run /login)|model[^\n]{0,40}(?:not found|does not exist|not supported)|unknown model|invalid model|not_found_error|permission_error|unknown (?:option|argument|flag)|unexpected argument|cannot be used with root|missing environment variable|must specify the \w*api_key|set an auth method|invalid_request_error|\(HTTP 400\)|\b400 bad request\b`)
	// outgrownRE is a request refused as too long for the model's context:
	// Anthropic's "prompt is too long: 215000 tokens > 200000 maximum",
	// OpenAI's "maximum context length is 128000 tokens".
	outgrownRE = lazyre.New(`(?i)prompt is too long|context[ _](?:length|window)|too many (?:input )?tokens|input token count[^\n]{0,40} exceeds the maximum`)
	// noiseRE is what is read past: where a crash's stack points
	// (index.js:429:17, "line 500, in f"), whose numbers are no HTTP
	// statuses, and a context window that is full (Claude Code's "Context
	// limit reached"), which is no limit to wait out.
	noiseRE = lazyre.New(`(?i)[\w./@-]+\.\w+:\d+(?::\d+)?|\bline \d+, in\b|context (?:window |length )?(?:limit )?(?:reached|exceeded|is full)`)
)

// classifyAs is Classify for a failure whose kind the CLI reported (by an
// HTTP status, say; 0 when it did not): that kind beats what the words of
// text suggest, but for a request refused as too long for the model's
// context, which is no problem of the service (see Classify). fallback is
// the message when text has no first line.
func classifyAs(text string, kind ProblemKind, fallback string, now time.Time) *Problem {
	if kind == Permanent && outgrownRE().MatchString(text) {
		kind = 0
	}
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
	if outgrownRE().MatchString(text) && !rateLimitRE().MatchString(text) {
		// Refused as too long, the conversation outgrew the model's
		// context in this run: the next begins afresh. (Not a limit on
		// the tokens of a minute: "429: too many tokens per minute".)
		return nil
	}
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

// The units of a wait, longest first where one begins another ("ms" before
// "m"): a unit must end its word or run into the next amount ("1h30m").
const waitUnits = `days?|d|hours?|hrs?|h|milliseconds?|ms|minutes?|mins?|m|seconds?|secs?|s`

const waitAmount = `\d+(?:\.\d+)?\s*(?:` + waitUnits + `)`

// The names of a date and a time of day, as the reset forms below use them.
const (
	monthName   = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?`
	weekdayName = `(mon|tue|wed|thu|fri|sat|sun)(?:day|s|sday|nesday|rs|rsday|urday)?\.?`
	timeOfDay   = `(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b`
	// Claude Code names the zone of its times: "resets 3pm (Europe/Rome)".
	zoneName = `(?:\s*\(([a-z][a-z0-9_+-]*(?:/[a-z0-9_+-]+)*)\))?`
	// The words before a reset time; a time elsewhere (a log line's
	// timestamp, "finished in 2.5s") says nothing of a limit.
	resetLead = `\b(?:resets?|again|retry)(?: at| on)?\s+`
)

var (
	// Claude Code's "Claude AI usage limit reached|1751234400".
	epochRE = lazyre.New(`limit reached\|(\d{9,11})`)
	// "try again in 2 hours 5 minutes", "retry after 30 seconds", "resets in
	// 1h30m", "try again 1 minute later"; OpenAI's "Please try again in
	// 2m30s" and "in 20ms"; Codex's "try again in 3 days 6 hours 57
	// minutes"; Gemini's "Please retry in 47.4s", "Your quota will reset
	// after 21h53m56s" and "retryDelay": "34s".
	waitRE = lazyre.New(`(?i)\b(?:again|retry|resets?|wait|available)(?:[ _-]?(?:in|after|for|delay))?"?(?:\s*[:=]\s*"?|\s+)(?:about\s+)?(` +
		waitAmount + `(?:(?:\s*,\s*|\s+and\s+|\s*)` + waitAmount + `)*)\b`)
	amountRE = lazyre.New(`(?i)(\d+(?:\.\d+)?)\s*(` + waitUnits + `)`)
	// An HTTP response's headers that say when to try again, as an error
	// may quote them: "retry-after: 12", "retry-after-ms":"1500", 'Retry-After':
	// 'Wed, 21 Oct 2026 07:28:00 GMT' (see retryafter.Parse).
	retryAfterRE = lazyre.New(`(?i)\b(retry-after(?:-ms)?)["']?\s*:\s*["']?(\d+(?:\.\d+)?\b|[a-z]{3}, \d{2} [a-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT)`)
	// A day of the year: Claude Code's "resets Nov 25, 5pm", "resets Sep 15
	// at 7pm", "resets Jul 31, 2am (UTC)"; Codex's reset on another day, "try
	// again at Nov 23rd, 2026 3:05 AM".
	dateRE = lazyre.New(`(?i)` + resetLead + monthName + `\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?(?:,|\s+at)?\s+` + timeOfDay + zoneName)
	// A day of the week: Claude Code's weekly "resets Mon 12:00am".
	weekdayRE = lazyre.New(`(?i)` + resetLead + weekdayName + `,?\s+(?:at\s+)?` + timeOfDay + zoneName)
	// "resets at 3pm", "resets 3:30 PM (Asia/Tokyo)", "try again at 15:00";
	// a bare number ("retry 2 of 5") is no time (see clockTime).
	atRE = lazyre.New(`(?i)(?:resets?|again|retry)( at)? ` + timeOfDay + zoneName)
	// An RFC 3339 time, as some CLIs print the reset.
	stampRE = lazyre.New(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})`)
)

// MaxWait bounds a reset said as a wait ("resets in 400 days"), or as a
// time a program wrote (an RFC 3339 stamp, an epoch, retry-after's HTTP
// date), such as the API agent's for a retry-after of 999999999 seconds:
// no agent's limit lasts longer than a month (a plan's monthly cycle;
// Claude's and Codex's are weekly), so a longer wait is a misreading or no
// limit worth sleeping through. Cut to a month, it still outlasts
// loop.max_duration, which stops the loop, and without one ralph tries
// again after a month. A date a person would write ("resets Jan 12, 10am")
// is the next such date, which may be months away.
const MaxWait = 31 * 24 * time.Hour

// capped is t, or the time MaxWait from now when t is later.
func capped(t, now time.Time) time.Time {
	if t.Sub(now) > MaxWait {
		return now.Add(MaxWait)
	}
	return t
}

// resetTime finds when a rate limit lifts, from the forms agents print;
// zero when the text does not say. A time of day without a date is the
// next one, and a date without a year the next one not past, but for one
// that passed just now, which is none (see upcoming).
func resetTime(text string, now time.Time) time.Time {
	if m := epochRE().FindStringSubmatch(text); m != nil {
		if sec, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return capped(time.Unix(sec, 0), now)
		}
	}
	if m := stampRE().FindString(text); m != "" {
		if t, err := time.Parse(time.RFC3339Nano, m); err == nil {
			return capped(t, now)
		}
	}
	if m := waitRE().FindStringSubmatch(text); m != nil {
		if d := waitOf(m[1]); d > 0 {
			return now.Add(d)
		}
	}
	if t := retryAfterIn(text, now); !t.IsZero() {
		return t
	}
	for _, m := range dateRE().FindAllStringSubmatch(text, -1) {
		if t, ok := onDate(m[1:], now); ok {
			return t
		}
	}
	for _, m := range weekdayRE().FindAllStringSubmatch(text, -1) {
		if t, ok := onWeekday(m[1:], now); ok {
			return t
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
		local := now.In(zone(m[5]))
		t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, local.Location())
		return upcoming(t, now, 0, 1)
	}
	return time.Time{}
}

// retryAfterIn reads the retry-after headers that text quotes, with
// retry-after-ms first when both are there, as a response's headers are
// read; zero when it quotes none. A wait or a date is at most MaxWait
// ahead, and a wait of nothing says nothing.
func retryAfterIn(text string, now time.Time) time.Time {
	var first time.Time
	for _, m := range retryAfterRE().FindAllStringSubmatch(text, -1) {
		t, ok := retryafter.Parse(m[1], m[2], now)
		switch {
		case !ok:
			continue
		case strings.Contains(m[2], ","):
			// A date is the time itself, as an RFC 3339 stamp is,
			// even one past.
		case !t.After(now):
			continue
		}
		t = capped(t, now)
		if strings.EqualFold(m[1], "retry-after-ms") {
			return t
		}
		if first.IsZero() {
			first = t
		}
	}
	return first
}

// waitOf adds up the amounts of a wait ("2 days 3 hours", "1h30m",
// "500ms"), at most MaxWait.
func waitOf(amounts string) time.Duration {
	var sec float64
	for _, a := range amountRE().FindAllStringSubmatch(amounts, -1) {
		n, _ := strconv.ParseFloat(a[1], 64)
		sec += n * waitUnit(a[2]).Seconds()
	}
	if sec > MaxWait.Seconds() {
		return MaxWait
	}
	return time.Duration(math.Round(sec * float64(time.Second)))
}

// waitUnit is the length of one of waitUnits.
func waitUnit(u string) time.Duration {
	u = strings.ToLower(u)
	switch {
	case u == "ms" || strings.HasPrefix(u, "milli"):
		return time.Millisecond
	case u[0] == 'd':
		return 24 * time.Hour
	case u[0] == 'h':
		return time.Hour
	case u[0] == 'm':
		return time.Minute
	}
	return time.Second
}

// onDate reads dateRE's month, day, year ("" for the next such date not
// past), hour, minute, am or pm, and zone.
func onDate(m []string, now time.Time) (time.Time, bool) {
	month, err := time.Parse("Jan", strings.ToUpper(m[0][:1])+strings.ToLower(m[0][1:3]))
	day, _ := strconv.Atoi(m[1])
	hour, minute, ok := clockTime(m[3], m[4], m[5])
	// A number after a date is a time of day only with a minute or am/pm:
	// "on Mar 4 2 times" is none.
	if err != nil || !ok || m[4] == "" && m[5] == "" {
		return time.Time{}, false
	}
	local := now.In(zone(m[6]))
	year := local.Year()
	if m[2] != "" {
		year, _ = strconv.Atoi(m[2])
	}
	t := time.Date(year, month.Month(), day, hour, minute, 0, 0, local.Location())
	if t.Day() != day { // Feb 30th
		return time.Time{}, false
	}
	if m[2] == "" {
		t = upcoming(t, now, 1, 0)
	}
	return t, true
}

// onWeekday reads weekdayRE's weekday, hour, minute, am or pm, and zone:
// the next such time.
func onWeekday(m []string, now time.Time) (time.Time, bool) {
	hour, minute, ok := clockTime(m[1], m[2], m[3])
	if !ok || m[2] == "" && m[3] == "" {
		return time.Time{}, false
	}
	want := time.Weekday(strings.Index("sunmontuewedthufrisat", strings.ToLower(m[0])) / 3)
	local := now.In(zone(m[4]))
	t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, local.Location())
	t = t.AddDate(0, 0, (int(want)-int(t.Weekday())+7)%7)
	return upcoming(t, now, 0, 7), true
}

// justPassed is how long ago a reset time that names no year (or no day)
// may be and still be the one that has just come rather than the next:
// an agent asked again a moment after its limit lifted may repeat the time
// it gave before. Read as the next one, "resets 3pm" at 3:00:05 would be a
// day's wait. Such a time says nothing: the backoff tries again soon.
const justPassed = time.Hour

// upcoming returns t when it is still ahead; when it has passed, the next
// such time, years and days later, or none (zero) when it passed just now.
func upcoming(t, now time.Time, years, days int) time.Time {
	switch {
	case t.After(now):
		return t
	case now.Sub(t) < justPassed:
		return time.Time{}
	}
	return t.AddDate(years, 0, days)
}

// zone is the location a reset time names, or local time when it names
// none or one this system does not know.
func zone(name string) *time.Location {
	if name != "" {
		if loc, err := time.LoadLocation(name); err == nil {
			return loc
		}
	}
	return time.Local
}

// clockTime reads a time of day from its hour, minute ("" for none) and
// am or pm ("" for a 24-hour clock); ok is false for no such time.
func clockTime(h, m, ampm string) (hour, minute int, ok bool) {
	hour, _ = strconv.Atoi(h)
	minute, _ = strconv.Atoi(m)
	if ampm != "" && (hour < 1 || hour > 12) {
		return 0, 0, false // "13pm"
	}
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
