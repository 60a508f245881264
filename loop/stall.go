package loop

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ralph-harness/ralph/checks"
	"github.com/ralph-harness/ralph/internal/lazyre"
	"github.com/ralph-harness/ralph/internal/lines"
	"github.com/ralph-harness/ralph/internal/textcut"
	"github.com/ralph-harness/ralph/progress"
)

// maxBaselineLines bounds the failure lines a baseline keeps in the ledger.
const maxBaselineLines = 200

// DefaultStallAfter is how many identical failures in a row stall a story.
const DefaultStallAfter = 3

// stalledPrefix starts the failed reason of a stalled story, so that the
// loop can tell a stall (exit 4) from a story that used up its attempts.
const stalledPrefix = "stalled: "

// workFiles returns the project's files as the agent may change them, by
// name: all but the three files ralph owns.
func workFiles(files []fileInfo) []fileInfo {
	work := slices.DeleteFunc(slices.Clone(files), func(f fileInfo) bool {
		return f.name == PRDFile || f.name == ProgressFile || f.name == HarnessFile
	})
	slices.SortFunc(work, func(a, b fileInfo) int { return strings.Compare(a.name, b.name) })
	return work
}

// changes returns the names of the files added, removed or changed (in
// size or time of change) from before to after, two lists of workFiles:
// what the agent did, as the stall breaker tells one try from the next.
func changes(before, after []fileInfo) []string {
	var names []string
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || i < len(before) && before[i].name < after[j].name:
			names = append(names, before[i].name) // removed
			i++
		case i == len(before) || after[j].name < before[i].name:
			names = append(names, after[j].name) // added
			j++
		default:
			if a, b := before[i].info, after[j].info; a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime()) {
				names = append(names, after[j].name)
			}
			i, j = i+1, j+1
		}
	}
	return names
}

var (
	// A line that says what failed: a failure word, or the name of an
	// error or exception (TypeError, AssertionError); not "stderr" or
	// "failover".
	errorLineRE = lazyre.New(`(?i)(?:error|exception)s?\b|\b(?:fail|failed|failures?|panic|panicked|expected|assert|assertion|cannot|undefined|want)\b`)
	// Terminal escapes and the marks the ledger puts for control bytes:
	// a failure reads the same in colour, plain, or read back.
	escapeRE = lazyre.New("(?:\x1b|\uFFFD)\\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f\uFFFD]")
	// What varies between two runs of the same failure: numbers (times,
	// line counts, addresses) and temporary paths; not the digits of a
	// name (see numbersOut).
	hexRE    = lazyre.New(`0x[0-9a-fA-F]+|\b[0-9a-f]{8,}\b`)
	numberRE = lazyre.New(`\d+(\.\d+)?`)
	tmpRE    = lazyre.New(`/tmp/[^\s:]*`)
	// A count of a run's results in a runner's summary ("1 failed, 10
	// passed, 1 warning in 0.52s", "Tests: 1 failed, 11 total", "10
	// passed; 1 failed; 0 ignored"), its numbers out: see tally.
	countRE = lazyre.New(`(?i)\bN (?:passed|passing|failed|failing|failures?|errors?|errored|skipped|pending|todo|warnings?|xfailed|xpassed|deselected|ignored|measured|filtered out|total|tests?|rerun|broken|flaky)\b`)
	// The counts of a tally that say something failed.
	failCountRE = lazyre.New(`(?i)^N (?:failed|failing|failures?|errors?|errored|broken)$`)
)

// maxFailureRead is how much of a line of a check's output is read for
// what failed. A line says what failed at its start (a test's name, an
// error's kind and message, a log line's level); what may follow (a dump
// of state, a minified bundle, a line of JSON) tells the fingerprint
// little, and would cost the patterns of normalise time for every byte of
// it, line after line: thousands of lines of 60 KiB took half a minute and
// held half a GiB. It is eight times maxFailureKept, so that what is kept
// of a line is the same wherever its numbers, of any length, moved the
// cut: they and runs of spaces, taken out, still leave more than is kept.
const maxFailureRead = 4 << 10

// readPart is the part of a line of a check's output read for what
// failed: its first maxFailureRead bytes, the cut marked, so that a secret
// it cuts in two is still redacted (see redact.Redactor.String).
func readPart(l string) string { return textcut.Head(l, maxFailureRead, "…") }

// failureLines are the lines of a check's output that say what failed, or
// its last lines when none does, normalised so that the same failure reads
// the same every time.
func failureLines(out string) []string {
	var picked []string
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		if l := readPart(l); errorLineRE().MatchString(l) {
			picked = append(picked, normalise(l))
		}
	}
	if len(picked) > 0 {
		return picked
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(readPart(lines[i])); l != "" {
			picked = append(picked, normalise(l))
		}
	}
	return picked
}

// lastFailures returns the last n lines of out that say what failed, or
// its last n lines when none does, normalised, the last one first.
func lastFailures(out string, n int) []string {
	lines := strings.Split(out, "\n")
	var picked, last []string
	for i := len(lines) - 1; i >= 0 && len(picked) < n; i-- {
		switch l := strings.TrimSpace(readPart(lines[i])); {
		case errorLineRE().MatchString(l):
			picked = append(picked, normalise(l))
		case l != "" && len(last) < n:
			last = append(last, normalise(l))
		}
	}
	if len(picked) == 0 {
		return last
	}
	return picked
}

// distinctFailures is failureLines without repeats, the first
// maxBaselineLines of them: what a baseline keeps and what a later run is
// compared with. An output that repeats a known failure line many times
// cannot push a new one past the window.
func distinctFailures(out string) []string {
	var picked []string
	seen := map[string]bool{}
	for _, l := range failureLines(out) {
		if !seen[l] {
			seen[l] = true
			picked = append(picked, l)
			if len(picked) == maxBaselineLines {
				break
			}
		}
	}
	return picked
}

// maxFailureLine is the longest line of a check's output that a
// failureCollector reads; a longer one is passed over.
const maxFailureLine = 64 << 10

// failureCollector gathers what distinctFailures would read of a check's
// whole output, as it comes, where the kept tail holds only its last 8 KiB:
// a new failure printed before 8 KiB of known ones would go unseen, and
// the tail's first line, cut anywhere, would read as new.
type failureCollector struct {
	split  lines.Splitter
	redact func(string) string
	seen   map[string]bool
	picked []string
	// read are the parts read of failure lines (see readPart) as they
	// came, up to maxReadLines of them and maxReadBytes in all: a line
	// printed again (a check failing the same way thousands of times) is
	// not redacted and normalised again.
	read      map[string]bool
	readBytes int
}

// maxReadLines and maxReadBytes bound failureCollector.read.
const (
	maxReadLines = 4096
	maxReadBytes = 1 << 20
)

func newFailureCollector(redact func(string) string) *failureCollector {
	c := &failureCollector{redact: redact, seen: map[string]bool{}, read: map[string]bool{}}
	c.split = lines.Splitter{Max: maxFailureLine, Line: c.line}
	return c
}

// Write reads p, up to the first maxBaselineLines distinct failure lines.
func (c *failureCollector) Write(p []byte) (int, error) {
	if len(c.picked) == maxBaselineLines {
		return len(p), nil
	}
	return c.split.Write(p)
}

func (c *failureCollector) line(l []byte) {
	// One byte past what readPart keeps tells it to cut the line; the
	// rest is not looked at, nor remembered in read.
	l = l[:min(len(l), maxFailureRead+1)]
	if len(c.picked) == maxBaselineLines || !mayFail(l) || c.read[string(l)] {
		return
	}
	part := readPart(string(l))
	if !errorLineRE().MatchString(part) {
		return
	}
	if len(c.read) < maxReadLines && c.readBytes+len(l) <= maxReadBytes {
		c.read[string(l)] = true
		c.readBytes += len(l)
	}
	n := normalise(c.redact(part))
	if !c.seen[n] {
		c.seen[n] = true
		c.picked = append(c.picked, n)
	}
}

// failureWords are what errorLineRE looks for, in lower case, by their
// first letter: a line with none of them (and no byte past ASCII, which
// case folding may turn into one) is not tried against the pattern, which
// costs microseconds a line.
var failureWords = func() (by [256][]string) {
	for _, w := range []string{"error", "exception", "fail", "panic", "expected", "assert", "cannot", "undefined", "want"} {
		by[w[0]] = append(by[w[0]], w)
		by[w[0]-'a'+'A'] = append(by[w[0]-'a'+'A'], w)
	}
	return by
}()

// mayFail reports whether l has one of failureWords, in any case, or a
// byte past ASCII.
func mayFail(l []byte) bool {
	for i, b := range l {
		if b >= 0x80 {
			return true
		}
		for _, w := range failureWords[b] {
			if len(l)-i >= len(w) && asciiFold(l[i+1:i+len(w)], w[1:]) {
				return true
			}
		}
	}
	return false
}

// asciiFold reports whether b is lower, ASCII letters in either case.
func asciiFold(b []byte, lower string) bool {
	for i := range len(lower) {
		if b[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// failures returns the distinct failure lines read, or, when there were
// none, those distinctFailures finds in out, the tail kept of the same
// output (its last lines, when none says what failed).
func (c *failureCollector) failures(out string) []string {
	c.split.Flush()
	if len(c.picked) > 0 {
		return c.picked
	}
	return distinctFailures(out)
}

// watchFailures sets opts to collect the failure lines of the whole output
// of each of cs that watch says is compared with a baseline; the result
// has their collectors by index, nil for the others. Reading an output
// for them costs: a check whose baseline passed is not read.
func (o *Options) watchFailures(cs []checks.Check, opts *checks.Options, watch func(checks.Check) bool) []*failureCollector {
	watched := make([]*failureCollector, len(cs))
	for i, c := range cs {
		if watch(c) {
			watched[i] = newFailureCollector(o.secrets().String)
		}
	}
	opts.Watch = func(i int) io.Writer {
		if watched[i] == nil {
			return nil
		}
		return watched[i]
	}
	return watched
}

// normalise returns line as the same failure reads every time (see the
// patterns above), cut to the words that say what failed (see keep). A
// check may print millions of failure lines that differ only by their
// numbers, each normalised in turn: a pattern, which costs a microsecond
// or more a line even where it finds nothing, is run only on a line that
// has what it looks for.
func normalise(line string) string {
	if mayEscape(line) {
		line = escapeRE().ReplaceAllString(line, "")
	}
	if strings.Contains(line, "/tmp/") {
		line = tmpRE().ReplaceAllString(line, "/tmp/…")
	}
	if mayHex(line) {
		line = hexRE().ReplaceAllString(line, "#")
	}
	line = numbersOut(line)
	if t, ok := tally(line); ok {
		return t
	}
	// Padding varies with the number it pads (pytest's "[ 50%]", "[100%]").
	return keep(strings.ReplaceAll(oneSpaced(line), "[ ", "["))
}

// oneSpaced is line's words with one space between them, as
// strings.Fields and strings.Join make them; a line that has them so
// already, as most have, is returned as it is.
func oneSpaced(line string) string {
	for i := range len(line) {
		switch b := line[i]; {
		case b >= utf8.RuneSelf, b <= '\r' && b >= '\t', b == ' ' && (i == 0 || i == len(line)-1 || line[i+1] == ' '):
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return line
}

// maxFailureKept is about how much of a normalised failure line is kept
// (see keep): what a baseline keeps in the ledger and what a fingerprint
// reads. A failure's test, kind and message come first and take a few
// hundred bytes at most (a pytest id with its parameters, a path and a
// compiler's message, 2.5 times the 200 bytes an excerpt shows of a line);
// what comes after them seldom tells one failure from another, and would
// fill the ledger (a baseline keeps 200 lines) and the last 4 MiB of it
// that ralph reads back.
const maxFailureKept = 512

// keep cuts a normalised line longer than maxFailureKept after its last
// word that ends within it, or its first word, and after the word that
// says what failed when that ends further: a failure line that is kept
// still says so, and is read back from the ledger as one (see
// failureLines). Cut between words, the line is its own normalised form:
// the words kept read as they did next to the ones cut (the patterns of
// normalise end a match at a space), the mark after a space is no part of
// the last one (a temporary path takes in all up to a space), and there is
// no "[ " before it (normalise took those out).
func keep(line string) string {
	if len(line) <= maxFailureKept {
		return line
	}
	i := max(strings.LastIndexByte(line[:maxFailureKept+1], ' '), 0)
	if m := errorLineRE().FindStringIndex(line); m != nil && m[1] > i {
		i = m[1]
	}
	j := strings.IndexByte(line[i:], ' ')
	if j < 0 {
		return line
	}
	return line[:i+j] + " …"
}

// mayEscape reports whether line may have what escapeRE takes out: a
// control byte but a tab, or U+FFFD, which the pattern also reads in the
// place of a byte that is no UTF-8.
func mayEscape(line string) bool {
	ascii := true
	for i := range len(line) {
		switch b := line[i]; {
		case b < ' ' && b != '\t', b == 0x7f:
			return true
		case b >= utf8.RuneSelf:
			ascii = false
		}
	}
	return !ascii && strings.ContainsRune(line, utf8.RuneError)
}

// mayHex reports whether line may have what hexRE takes out: "0x", or
// eight or more digits and letters a to f in a row.
func mayHex(line string) bool {
	run := 0
	for i := range len(line) {
		switch b := line[i]; {
		case '0' <= b && b <= '9' || 'a' <= b && b <= 'f':
			if run++; run == 8 || b == '0' && i+1 < len(line) && line[i+1] == 'x' {
				return true
			}
		default:
			run = 0
		}
	}
	return false
}

// tally reduces a runner's summary of counts, its numbers out, to the
// counts that say something failed ("N failed, N errors"): the others
// (passed, skipped, warnings) come and go with tests that pass, and a
// known failure's summary would read as new once a test was added. ok is
// false for a line that is no tally: one with fewer than two counts, but
// for pytest's banner ("==== 1 failed in 0.12s ====").
func tally(line string) (string, bool) {
	banner := strings.HasPrefix(line, "==") && strings.HasSuffix(line, "==")
	if n := mayCount(line); n == 0 || n == 1 && !banner {
		return "", false // fewer counts than that: the pattern need not run
	}
	counts := countRE().FindAllString(line, -1)
	if len(counts) == 0 || len(counts) == 1 && !banner {
		return "", false
	}
	var failing []string
	for _, c := range counts {
		if failCountRE().MatchString(c) && !slices.Contains(failing, c) {
			failing = append(failing, c)
		}
	}
	return strings.Join(failing, ", "), true
}

// mayCount returns how many places of line a count of countRE may begin
// at: an N or n that begins a word, a space after it.
func mayCount(line string) int {
	n := 0
	for i := 0; i+1 < len(line); i++ {
		if line[i]|0x20 == 'n' && line[i+1] == ' ' && (i == 0 || !isWordByte(line[i-1])) {
			n++
		}
	}
	return n
}

// numbersOut replaces the numbers of line with N, but for those in a name
// (TestLogin/case_2, test_v1, test_add[3]): a new failing case differs from
// a known one by those digits alone. A name is a word that begins with a
// letter or "_"; a timestamp's 22T10 or a duration's 1m30s are no names.
// The numbers are those numberRE finds, found without it: a failure
// printed over and over with its own numbers has some on every line, and
// the pattern cost more than all the rest of normalise.
func numbersOut(line string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(line); {
		if !isDigit(line[i]) {
			i++
			continue
		}
		j := digitsEnd(line, i)
		if j+1 < len(line) && line[j] == '.' && isDigit(line[j+1]) {
			j = digitsEnd(line, j+1)
		}
		if !inName(line, i, j) {
			if b.Cap() == 0 {
				b.Grow(len(line)) // once, not as it fills
			}
			b.WriteString(line[last:i])
			b.WriteByte('N')
			last = j
		}
		i = j
	}
	if last == 0 {
		return line
	}
	b.WriteString(line[last:])
	return b.String()
}

// inName reports whether the number at line[i:j] is part of a name: the
// word it is in begins with a letter or "_", or it is a case's number in
// brackets right after a name (test_add[3], not [12ms] or [100%]).
func inName(line string, i, j int) bool {
	if i > 0 && line[i-1] == '[' {
		return i > 1 && isWordByte(line[i-2]) && j < len(line) && line[j] == ']'
	}
	start := i
	for start > 0 && isWordByte(line[start-1]) {
		start--
	}
	c := line[start]
	return c == '_' || 'a' <= c|0x20 && c|0x20 <= 'z'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitsEnd returns where the digits that begin line[i:] end.
func digitsEnd(line string, i int) int {
	for i < len(line) && isDigit(line[i]) {
		i++
	}
	return i
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z'
}

// coarse is a normalised line with every number replaced, as baselines
// taken before numbersOut kept the digits of names: such a baseline still
// knows its failures.
func coarse(line string) string {
	return numberRE().ReplaceAllString(line, "N")
}

// ending is how a failed check ended, kept after a baseline's failure
// lines: a check that now times out or crashes does not fail as it did,
// whatever lines it printed. Another exit status is no other ending: some
// runners exit with the number of failures (mocha, Catch2), which a known
// failure fixed or flaky changes; a crash is a death by a signal that says
// one (SIGILL to SIGKILL, SIGSEGV), as the shell reports it.
func ending(r checks.Result) string {
	switch {
	case r.TimedOut:
		return "(timed out)"
	case r.ExitCode < 0, r.ExitCode >= 128+4 && r.ExitCode <= 128+9, r.ExitCode == 128+11:
		return "(crashed)"
	}
	return "(failed)"
}

// endingOf splits a baseline's excerpt into its failure lines and the ending
// kept on its last line; "" for a baseline taken before endings were kept.
func endingOf(excerpt string) (lines, end string) {
	rest, last := "", strings.TrimRight(excerpt, "\n")
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		rest, last = last[:i], last[i+1:]
	}
	switch strings.TrimSpace(last) {
	case "(timed out)", "(crashed)", "(failed)":
		return rest, strings.TrimSpace(last)
	}
	return excerpt, ""
}

// fingerprint identifies an unsuccessful iteration: which checks failed and
// how, which files the agent changed, and what it claimed. The same
// fingerprint again and again is a loop that makes no progress: an agent
// that works its way through a story a file at a time, claiming nothing
// until it is done, changes other files each time. outputs are the failed
// checks' kept outputs by name, read instead of the entry's excerpts,
// which keep only their last lines.
func fingerprint(e progress.Entry, outputs map[string]output, changed []string) string {
	h := sha256.New()
	for _, c := range e.Checks {
		if c.Passed || c.Known || c.Optional {
			continue
		}
		out, ok := outputs[c.Name]
		if !ok {
			out = output{text: c.Excerpt}
		}
		if !out.cut {
			// The first lines say what failed; their number says how
			// much, so an agent fixing one failure of many is not taken
			// for stuck.
			lines := failureLines(out.text)
			fmt.Fprintf(h, "check %s: %d\n", c.Name, len(lines))
			for _, l := range lines[:min(3, len(lines))] {
				fmt.Fprintf(h, "  %s\n", l)
			}
			continue
		}
		// The end of a longer output begins anywhere, with as many lines as
		// fit: its first line, its first failures and their number move
		// with the output's length. Its last failures do not, nor the
		// number of lines of the whole, which a failure fixed changes.
		_, text, _ := strings.Cut(out.text, "\n")
		fmt.Fprintf(h, "check %s: the end of %d lines\n", c.Name, out.lines)
		for _, l := range lastFailures(text, 3) {
			fmt.Fprintf(h, "  %s\n", l)
		}
	}
	fmt.Fprintf(h, "changed %q\nclaim %s\ntampered %d\n", changed, e.Claim, len(e.Tampered))
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// output is a check's kept output and whether it is the end of a longer one
// (checks.Result's Output and Cut).
type output struct {
	text  string
	cut   bool
	lines int // of the whole output
}

// repeats counts the story's latest attempts, newest first, that ended with
// the same fingerprint, reading the ledger back only as far as it must.
func repeats(path, storyID, fp string) (int, error) {
	n := 0
	// Only the story's own entries are parsed: the others are passed over
	// by their start markers.
	err := progress.TailHeads(path, maxHistoryScan, func(h progress.Head) bool {
		if h.StoryID != storyID || !isAttempt(h.Outcome) {
			return true
		}
		if h.Outcome != Retry || h.Entry().Fingerprint != fp {
			return false
		}
		n++
		return true
	})
	return n, err
}

// stallReason describes a stall for prd.json and the ledger: changed says
// whether the agent changed files of the project, undid whether the agent's
// guard undid what it changed of those ralph guards.
func stallReason(e progress.Entry, times int, changed, undid bool) string {
	var failing []string
	for _, c := range e.Checks {
		if !c.Passed && !c.Known && !c.Optional {
			failing = append(failing, c.Name)
		}
	}
	what := "no check failed"
	if len(failing) > 0 {
		what = "check " + strings.Join(failing, ", ") + " failed"
	}
	switch {
	case !changed && undid:
		// What it changed was the guard's to undo: the same refusal.
		what += ", and the agent changed nothing but what ralph guards, which ralph undid"
	case !changed:
		what += ", and the agent changed nothing"
	}
	if e.Claim == "" {
		what += ", and claimed nothing"
	}
	return fmt.Sprintf("%sthe same failure %d times in a row (%s)", stalledPrefix, times, what)
}

// baselineOf finds the baseline recorded before the story's first attempt;
// ran says whether the ledger has an entry for the story at all, with a
// baseline or without one.
func baselineOf(path, storyID string) (found []progress.Check, ran bool, err error) {
	err = progress.TailHeads(path, maxHistoryScan, func(h progress.Head) bool {
		if h.StoryID != storyID {
			return true
		}
		ran = true
		found = h.Entry().Baseline
		return len(found) == 0
	})
	return found, ran, err
}

// knownFailure reports whether a check fails only in ways the baseline
// already did: it ended as it did then (end, see ending), and every line
// that says what failed now (now, read as the baseline was kept: the first
// maxBaselineLines distinct failure lines) said so before.
func knownFailure(baseline []progress.Check, name string, now []string, end string) bool {
	for _, b := range baseline {
		if b.Name != name || b.Passed {
			continue
		}
		lines, was := endingOf(b.Excerpt)
		if was != "" && was != end {
			return false
		}
		before := failureLines(lines)
		if len(now) == 0 {
			// A silent failure is known only as a silent one, ended the
			// same way.
			return len(before) == 0 && was == end
		}
		for _, l := range now {
			if !slices.Contains(before, l) && !slices.Contains(before, coarse(l)) {
				return false
			}
		}
		return true
	}
	return false
}
