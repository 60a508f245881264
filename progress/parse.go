package progress

import (
	"bufio"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Parse reads a whole progress.txt: the head (everything before the first
// start marker or started marker, verbatim) and the complete entries in
// order. Torn entries (a start marker with no end marker before the next
// start marker or the end of the file) are skipped and counted; started
// markers are skipped. Lines it does not understand inside an entry are
// ignored, so that older ralphs read newer ledgers. Parse never fails on
// malformed text; it returns an error only when reading fails.
func Parse(r io.Reader) (head string, entries []Entry, torn int, err error) {
	head, torn, err = Scan(r, func(e Entry) error {
		entries = append(entries, e)
		return nil
	})
	return head, entries, torn, err
}

// Scan reads a whole progress.txt as Parse does, but hands each complete
// entry to fn as soon as it is read, keeping none: a ledger of a million
// entries is read in the memory of one. It stops at fn's first error and
// returns it.
func Scan(r io.Reader, fn func(Entry) error) (head string, torn int, err error) {
	br := bufio.NewReader(r)
	var h strings.Builder
	var cur *entryParser
	inLedger := false // a started marker ended the head
	finish := func() error {
		if cur == nil {
			return nil
		}
		e, ok := cur.entry()
		if !ok {
			torn++
			return nil
		}
		return fn(e)
	}
	for {
		raw, rerr := br.ReadString('\n')
		if raw != "" {
			line := trimEOL(raw)
			if p, ok := startEntry(line); ok {
				if err := finish(); err != nil {
					return h.String(), torn, err
				}
				cur = p
			} else if cur != nil {
				cur.line(line)
			} else if isMark(line) {
				inLedger = true
			} else if !inLedger {
				h.WriteString(raw)
			}
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				return h.String(), torn, rerr
			}
			break
		}
	}
	return h.String(), torn, finish()
}

// trimEOL removes a line's newline and one carriage return, so that a file a
// human saved with CRLF line ends still parses. Values never end in \r
// (Format replaces it), so nothing is lost.
func trimEOL(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// parseSegment parses text that begins with a start marker line and holds one
// entry, possibly followed by lines outside any entry.
func parseSegment(seg []byte) (Entry, bool) {
	lines := strings.Split(string(seg), "\n")
	p, ok := startEntry(trimEOL(lines[0]))
	if !ok {
		return Entry{}, false
	}
	for _, l := range lines[1:] {
		p.line(trimEOL(l))
	}
	return p.entry()
}

// parseStart recognises a start marker line,
// "=== ralph iteration N · STORY · OUTCOME ===". The iteration number is read
// from the left and the outcome from the right, so a story id may itself
// contain " · ".
func parseStart(line string) (iteration int, storyID, outcome string, ok bool) {
	if len(line) < len(startPrefix)+len(markerEnd) ||
		!strings.HasPrefix(line, startPrefix) || !strings.HasSuffix(line, markerEnd) {
		return 0, "", "", false
	}
	mid := line[len(startPrefix) : len(line)-len(markerEnd)]
	num, rest, _ := strings.Cut(mid, sep)
	n, err := strconv.Atoi(num)
	i := strings.LastIndex(rest, sep)
	if err != nil || i < 0 {
		return 0, "", "", false
	}
	return n, rest[:i], rest[i+len(sep):], true
}

func startEntry(line string) (*entryParser, bool) {
	n, id, outcome, ok := parseStart(line)
	if !ok {
		return nil, false
	}
	return &entryParser{e: Entry{Iteration: n, StoryID: id, Outcome: outcome}, cur: -1}, true
}

type field struct {
	key   string
	lines []string
}

// entryParser collects the lines of one entry after its start marker.
type entryParser struct {
	e      Entry
	fields []field
	cur    int // index in fields that continuation lines extend, or -1
	closed bool
}

// isCont reports whether line continues the field above it (see
// writeField).
func isCont(line string) bool {
	return line == contPrefix || strings.HasPrefix(line, contPrefix+" ")
}

func (p *entryParser) line(s string) {
	if p.closed {
		return
	}
	if s == endMarker(p.e.Iteration) {
		p.closed = true
		return
	}
	if isCont(s) {
		if p.cur >= 0 {
			f := &p.fields[p.cur]
			f.lines = append(f.lines, strings.TrimPrefix(s[len(contPrefix):], " "))
		}
		return
	}
	if key, value, ok := keyLine(s); ok {
		p.fields = append(p.fields, field{key: key, lines: []string{value}})
		p.cur = len(p.fields) - 1
		return
	}
	// A line that is neither a key nor a continuation ends the current
	// value: nothing after it can belong to it.
	p.cur = -1
}

// keyLine splits "key: value" (or "key:" for a value whose first line is
// empty); keys are lower-case letters.
func keyLine(s string) (key, value string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", "", false
	}
	for _, c := range []byte(s[:i]) {
		if c < 'a' || c > 'z' {
			return "", "", false
		}
	}
	rest := s[i+1:]
	switch {
	case rest == "":
		return s[:i], "", true
	case rest[0] == ' ':
		return s[:i], rest[1:], true
	}
	return "", "", false
}

// entry interprets the collected fields; ok is false for a torn entry.
// Malformed values are skipped rather than reported: the ledger is a log, and
// one damaged line must not hide the rest of it.
func (p *entryParser) entry() (Entry, bool) {
	if !p.closed {
		return Entry{}, false
	}
	e := p.e
	for _, f := range p.fields {
		v := strings.Join(f.lines, "\n")
		switch f.key {
		case "time":
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				t = t.UTC()
				// Years past 9999 cannot be written back as RFC 3339.
				if y := t.Year(); y >= 0 && y <= 9999 {
					e.Time = t
				}
			}
		case "story":
			if title, ok := strings.CutPrefix(v, e.StoryID+" "); ok {
				e.StoryTitle = title
			} else if v == e.StoryID {
				e.StoryTitle = ""
			} else {
				e.StoryTitle = v
			}
		case "attempt":
			if n, err := strconv.Atoi(v); err == nil {
				e.Attempt = n
			}
		case "agent":
			parseAgent(&e, v)
		case "usage":
			parseUsage(&e, v)
		case "check":
			e.Checks = append(e.Checks, parseCheck(v))
		case "baseline":
			e.Baseline = append(e.Baseline, parseCheck(v))
		case "fingerprint":
			e.Fingerprint = v
		case "tampered":
			if v != "" {
				e.Tampered = append(e.Tampered, v)
			}
		case "commit":
			e.Commit = v
		case "question":
			e.Question = v
		case "summary":
			e.Summary = v
		case "learning":
			if v != "" {
				e.Learnings = append(e.Learnings, v)
			}
		case "totals":
			parseTotals(&e.Totals, v)
		}
	}
	return e, true
}

// parseAgent reads "exit N after DUR[ · claimed done|blocked][ · NOTE]".
func parseAgent(e *Entry, v string) {
	rest, ok := strings.CutPrefix(v, "exit ")
	if !ok {
		return
	}
	code, rest, ok := strings.Cut(rest, " after ")
	if !ok {
		return
	}
	n, err := strconv.Atoi(code)
	if err != nil {
		return
	}
	e.AgentExit = n
	end := len(rest)
	if i := strings.Index(rest, sep); i >= 0 {
		end = i
	}
	if i := strings.IndexByte(rest[:end], '\n'); i >= 0 {
		end = i
	}
	if d, err := time.ParseDuration(rest[:end]); err == nil {
		e.AgentDuration = d
	}
	rest, ok = strings.CutPrefix(rest[end:], sep)
	if !ok {
		return
	}
	for _, claim := range []string{"done", "blocked"} {
		c := "claimed " + claim
		if rest == c {
			e.Claim = claim
			return
		}
		if note, ok := strings.CutPrefix(rest, c+sep); ok {
			e.Claim = claim
			e.AgentNote = note
			return
		}
	}
	e.AgentNote = rest
}

// parseUsage reads "N input tokens · M output tokens[ · $C]".
func parseUsage(e *Entry, v string) {
	for _, part := range strings.Split(v, sep) {
		if s, ok := strings.CutSuffix(part, " input tokens"); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				e.InputTokens = n
			}
		} else if s, ok := strings.CutSuffix(part, " output tokens"); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				e.OutputTokens = n
			}
		} else if s, ok := strings.CutPrefix(part, "$"); ok {
			if c, ok := parseCost(s); ok {
				e.CostUSD, e.CostKnown = c, true
			}
		}
	}
}

// parseCost reads a cost in dollars: a finite number of at least 0, as
// ralph writes one. ParseFloat takes "NaN" and "Inf" as well, which no
// JSON output can hold and no budget can be compared with.
func parseCost(s string) (float64, bool) {
	c, err := strconv.ParseFloat(s, 64)
	return c, err == nil && c >= 0 && !math.IsInf(c, 0)
}

// parseCheck reads "NAME · pass|fail|skip · DUR[ · optional][ · timed
// out][ · known failure][ · N tests run]" and the excerpt on the
// continuation lines. It reads from the right so that a check's name may
// contain " · ".
func parseCheck(v string) Check {
	var c Check
	line, excerpt, _ := strings.Cut(v, "\n")
	c.Excerpt = excerpt
	if i := strings.LastIndex(line, sep); i >= 0 {
		// "3 tests run". A ralph that counted skipped tests with those
		// that ran wrote "3 tests": that count is read as none, so that
		// the test ratchet starts the check's count anew rather than
		// compare tests run with tests run and skipped.
		count, run := strings.CutSuffix(line[i+len(sep):], " run")
		n, ok := strings.CutSuffix(count, " tests")
		if !ok {
			n, ok = strings.CutSuffix(count, " test")
		}
		if ok {
			if v, err := strconv.Atoi(n); err == nil && v > 0 {
				line = line[:i]
				if run {
					c.Tests = v
				}
			}
		}
	}
	line, c.Known = strings.CutSuffix(line, sep+"known failure")
	line, c.TimedOut = strings.CutSuffix(line, sep+"timed out")
	line, c.Optional = strings.CutSuffix(line, sep+"optional")
	i := strings.LastIndex(line, sep)
	if i < 0 {
		c.Name = line
		return c
	}
	if d, err := time.ParseDuration(line[i+len(sep):]); err == nil {
		c.Duration = d
	}
	line = line[:i]
	i = strings.LastIndex(line, sep)
	if i < 0 {
		c.Name = line
		return c
	}
	switch line[i+len(sep):] {
	case "pass":
		c.Passed = true
	case "skip":
		c.Skipped = true
	}
	c.Name = line[:i]
	return c
}

// parseTotals reads "iterations N · tokens T · cost $C · elapsed D", and
// " · lost L" after them when there is one.
func parseTotals(t *Totals, v string) {
	for _, part := range strings.Split(v, sep) {
		name, value, _ := strings.Cut(part, " ")
		switch name {
		case "iterations":
			if n, err := strconv.Atoi(value); err == nil {
				t.Iterations = n
			}
		case "tokens":
			if n, err := strconv.ParseInt(value, 10, 64); err == nil {
				t.Tokens = n
			}
		case "cost":
			if c, ok := parseCost(strings.TrimPrefix(value, "$")); ok {
				t.CostUSD = c
			}
		case "elapsed":
			if d, err := time.ParseDuration(value); err == nil {
				t.Elapsed = d
			}
		case "lost":
			if n, err := strconv.Atoi(value); err == nil && n > 0 {
				t.Lost = n
			}
		}
	}
}
