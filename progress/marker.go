package progress

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-harness/ralph/internal/readbuf"
)

// An iteration in flight is recorded in progress.txt itself, the only place
// ralph may keep state: before the agent starts, the loop appends a started
// marker, one line,
//
//	=== ralph started iteration 5 · US-002 · attempt 1 · 2026-01-02T03:04:05Z ===
//
// followed on a story's first attempt by its baseline, as "baseline:" lines
// written as an entry writes them, and syncs it, so that a ralph killed at
// any later instant (during the agent, the checks, the writes or the
// commit) leaves a trace of what was running. A story's first attempt with
// baseline checks has a marker before them too, for the minutes they may
// take (a `ralph task` edit of the story then finds it running):
//
//	=== ralph started iteration 5 · US-002 · attempt 1 · baseline checks · 2026-01-02T03:04:05Z ===
//
// It keeps the guard's digests too (see Mark.Guarded): the checks run the
// agent's code. The marker with the baseline follows it once they end. An
// iteration stopped before that did nothing yet: no entry is recorded for
// it, only that it is over (by the ralph a signal stopped, or else by the
// next `ralph loop`),
//
//	=== ralph dropped iteration 5 · US-002 · attempt 1 · baseline checks · 2026-01-02T03:04:05Z ===
//
// and the next iteration takes its number (see Mark.Recorded). The entry
// that ends the iteration follows the marker directly (after a blank line
// when the baseline is longer than the end of the file Append reads).
// A marker with no complete entry after it, at the end of the ledger, is an
// iteration that ralph never finished recording: InFlight finds it, and the
// next `ralph loop` records it as interrupted under the marker's number
// (but for one taking its baseline), so numbering carries on and no
// iteration is silently redone as if new.
//
// Markers stay in the file: the ledger is append-only, and removing one would
// mean rewriting the file. Every reader skips them (Parse, Tail, ReadHead,
// Follower); a marker ends the head like an entry does. The marker holds no
// process id: it is written before the agent exists, and an id would make a
// ledger written with a fixed clock differ from run to run. What a dead
// ralph's agent and checks left running is found instead by the
// environment ralph gave them (RALPH_ITERATION, RALPH_TASK_ID, and the
// work directory in RALPH_DIR), which also finds a child that left their
// process groups.

// Mark is an iteration in flight, as its started marker records it.
type Mark struct {
	Iteration int
	StoryID   string
	Attempt   int
	Time      time.Time
	// Baseline are the baseline checks taken before the story's first
	// attempt, when this is that attempt: they were run before the agent
	// and cannot be run again once it has worked, so the marker keeps
	// them for the entry that ends the iteration, whoever writes it.
	Baseline []Check
	// TakingBaseline marks the iteration's first marker when its baseline
	// checks are about to run: the agent has not started, and the marker
	// with the baseline follows once they end. It is on the marker's line,
	// so that the marker cannot be read without it.
	TakingBaseline bool
	// Dropped marks the line the next ralph appends after the marker of an
	// iteration stopped during its baseline checks (see Ledger.Drop): the
	// iteration is over, with no entry.
	Dropped bool
	// Guarded are digests of what the guard watches, as it was when the
	// agent began (or the baseline checks, which run the agent's code): a
	// ralph killed before its guard looked keeps no copy to put back, and
	// the next one compares these with the files (see package loop). They
	// are "guarded:" lines after the marker's, the digest first. A marker
	// of baseline checks that an older ralph wrote has none.
	Guarded []Sum
}

// Sum is a digest of a file the guard watches, by the file's name.
type Sum struct {
	Name, Digest string
}

// Recorded reports whether the next `ralph loop` records m's iteration, as
// interrupted, when it finds it in flight, rather than giving its number
// to the next iteration: one stopped during its baseline checks did
// nothing yet, and its baseline is taken again.
func (m *Mark) Recorded() bool { return !m.TakingBaseline }

// takingBaseline ends the story part of a marker whose baseline checks run
// (see Mark.TakingBaseline).
const takingBaseline = sep + "baseline checks"

const (
	markPrefix    = "=== ralph started iteration "
	droppedPrefix = "=== ralph dropped iteration "
)

// formatMark renders m as its marker line, ending with a newline, followed
// by its baseline checks as an entry writes them ("baseline: ..." lines and
// their continuation lines). The story id is sanitised as in an entry's
// start marker.
func formatMark(m Mark) []byte {
	var b strings.Builder
	if m.Dropped {
		b.WriteString(droppedPrefix)
	} else {
		b.WriteString(markPrefix)
	}
	b.WriteString(strconv.Itoa(m.Iteration))
	b.WriteString(sep)
	b.WriteString(oneLine(m.StoryID))
	b.WriteString(sep + "attempt ")
	b.WriteString(strconv.Itoa(m.Attempt))
	if m.TakingBaseline {
		b.WriteString(takingBaseline)
	}
	b.WriteString(sep)
	b.WriteString(m.Time.UTC().Format(time.RFC3339))
	b.WriteString(markerEnd + "\n")
	for _, g := range m.Guarded {
		writeField(&b, "guarded", g.Digest+" "+oneLine(g.Name))
	}
	for _, c := range m.Baseline {
		writeField(&b, "baseline", formatCheck(c))
	}
	return []byte(b.String())
}

// parseMarkBlock recognises a marker line and the lines after it that
// belong to it (see formatMark), up to the first that does not; n is how
// many lines the block has.
func parseMarkBlock(lines []string) (m Mark, n int, ok bool) {
	m, ok = parseMark(trimEOL(lines[0]))
	if !ok {
		return Mark{}, 0, false
	}
	p := &entryParser{cur: -1}
	n = 1
	for _, l := range lines[1:] {
		l = trimEOL(l)
		if !markField(l) {
			break
		}
		p.line(l)
		n++
	}
	for _, f := range p.fields {
		switch f.key {
		case "baseline":
			m.Baseline = append(m.Baseline, parseCheck(strings.Join(f.lines, "\n")))
		case "guarded":
			if digest, name, ok := strings.Cut(f.lines[0], " "); ok {
				m.Guarded = append(m.Guarded, Sum{Name: name, Digest: digest})
			}
		}
	}
	return m, n, true
}

// markKeys begin the lines of a marker's block (see formatMark), but for
// continuation lines.
var markKeys = []string{"guarded:", "baseline:"}

// blockLine reports whether line, the torn end of a file, may be a piece
// of a marker block's line.
func blockLine(line string) bool {
	for _, start := range append([]string{contPrefix}, markKeys...) {
		if strings.HasPrefix(line, start) || strings.HasPrefix(start, line) {
			return true
		}
	}
	return false
}

// markField reports whether line can belong to a marker's block: a
// guarded or baseline line, or a continuation line.
func markField(line string) bool {
	for _, key := range markKeys {
		if strings.HasPrefix(line, key) {
			return true
		}
	}
	return isCont(line)
}

// parseMark recognises a marker line, or the line that drops one. The
// iteration number is read from the left and the attempt and time from the
// right, so a story id may itself contain " · ".
func parseMark(line string) (Mark, bool) {
	dropped := false
	rest, ok := strings.CutPrefix(line, markPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(line, droppedPrefix); !ok {
			return Mark{}, false
		}
		dropped = true
	}
	mid, ok := strings.CutSuffix(rest, markerEnd)
	if !ok {
		return Mark{}, false
	}
	num, rest, ok := strings.Cut(mid, sep)
	if !ok {
		return Mark{}, false
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return Mark{}, false
	}
	i := strings.LastIndex(rest, sep)
	if i < 0 {
		return Mark{}, false
	}
	t, err := time.Parse(time.RFC3339, rest[i+len(sep):])
	if err != nil {
		return Mark{}, false
	}
	rest = rest[:i]
	rest, taking := strings.CutSuffix(rest, takingBaseline)
	i = strings.LastIndex(rest, sep+"attempt ")
	if i < 0 {
		return Mark{}, false
	}
	attempt, err := strconv.Atoi(rest[i+len(sep+"attempt "):])
	if err != nil {
		return Mark{}, false
	}
	return Mark{Iteration: n, StoryID: rest[:i], Attempt: attempt, Time: t.UTC(), TakingBaseline: taking, Dropped: dropped}, true
}

func isMark(line string) bool {
	_, ok := parseMark(line)
	return ok
}

// Begin records durably that iteration m has started: it appends m's marker
// and its baseline (on lines of their own, after a blank line) and syncs
// the file (or queues the sync, see QueueSyncs). The entry Append writes
// next follows them.
//
// The sync is what lets a crash of the machine, not only of ralph, be
// recovered from: the verdict reaches prd.json before the entry reaches
// the ledger, and a verdict on disk must find its marker there, or the
// attempt it counts would have no record at all. With the sync queued, the
// caller waits for the queue before it writes the verdict.
func (l *Ledger) Begin(m Mark) error {
	if err := l.write(func(last []byte, _ bool) []byte {
		var data []byte
		if len(last) > 0 {
			if last[len(last)-1] != '\n' {
				data = append(data, '\n')
			}
			data = append(data, '\n')
		}
		return append(data, formatMark(m)...)
	}); err != nil {
		return fmt.Errorf("record the start of iteration %d in %s: %w", m.Iteration, l.path, err)
	}
	return nil
}

// Drop records that iteration m, found in flight while it took its
// baseline (see Mark.Recorded), is over without an entry: it appends the
// line that drops m's marker, so that the story is no longer taken for
// running, and syncs it (or queues the sync). The line is all it appends:
// the marker's digests stay with the marker.
func (l *Ledger) Drop(m Mark) error {
	m.Dropped, m.Baseline, m.Guarded = true, nil, nil
	if err := l.write(func(last []byte, _ bool) []byte {
		if len(last) > 0 && last[len(last)-1] != '\n' {
			return append([]byte("\n"), formatMark(m)...)
		}
		return formatMark(m)
	}); err != nil {
		return fmt.Errorf("record the end of iteration %d in %s: %w", m.Iteration, l.path, err)
	}
	return nil
}

// endsWithMark reports whether tail, the end of a file (all of it when
// whole), ends with a complete marker and its block, so that the entry
// appended next belongs to it. A block longer than tail reads as no
// marker: the entry then follows it after a blank line, which every
// reader takes as well.
func endsWithMark(tail []byte, whole bool) bool {
	if len(tail) == 0 || tail[len(tail)-1] != '\n' {
		return false
	}
	body := tail[:len(tail)-1]
	for {
		i := bytes.LastIndexByte(body, '\n')
		if i < 0 && !whole {
			// The line may begin before what was read.
			return false
		}
		line := trimEOL(string(body[i+1:]))
		if isMark(line) {
			return true
		}
		if i < 0 || !markField(line) {
			return false
		}
		body = body[:i]
	}
}

// InFlight returns the iteration that was started in the ledger at path and
// never recorded: the last marker after the last complete entry, when its
// number is above that entry's. It returns nil when there is none (and for
// a missing file). A torn entry after the marker does not count: that
// iteration's record was cut short.
func InFlight(path string) (*Mark, error) {
	last, after, err := lastComplete(path)
	if err != nil {
		return nil, err
	}
	var found *Mark
	lines := strings.Split(string(after), "\n")
	// A last line without its newline was torn. A piece of a baseline
	// line must not count: a failure line cut short could pass for
	// another failure, which would then count as known.
	end := len(lines) - 1
	torn := lines[end] != "" && !isMark(trimEOL(lines[end]))
	// A block cut short may lack digests: it has none (see Mark.Guarded),
	// rather than name a file as new. Only a torn line that could be the
	// block's cuts it short: text after the block, whoever appended it, is
	// no reason to drop them.
	tornBlock := torn && blockLine(lines[end])
	if torn {
		lines[end] = ""
	}
	for i := range lines {
		if m, n, ok := parseMarkBlock(lines[i:]); ok {
			if tornBlock && i+n >= end {
				m.Guarded = nil
			}
			found = &m
			if m.Dropped {
				found = nil
			}
		}
	}
	if found == nil || (last != nil && found.Iteration <= last.Iteration) {
		return nil, nil
	}
	return found, nil
}

// lastComplete returns the last complete entry of the file at path (nil when
// there is none) and the text after it: after the line of its end marker, or
// the whole file when there is no complete entry. It reads backwards from the
// end, as Tail does.
func lastComplete(path string) (*Entry, []byte, error) {
	f, st, err := readbuf.OpenFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, bare(err))
	}
	defer f.Close()
	// buf is the file from off to the end; cut is where, in buf, the
	// segments already found to be torn begin.
	off := st.Size()
	var buf []byte
	cut := 0
	for {
		ss := starts(buf[:cut], off == 0)
		for k := len(ss) - 1; k >= 0; k-- {
			p := ss[k]
			if e, ok := parseSegment(buf[p:cut]); ok {
				rest, _ := afterEnd(buf[p:], e.Iteration)
				return &e, rest, nil
			}
			cut = p
		}
		if off == 0 {
			return nil, buf, nil
		}
		n := min(int64(max(blockSize, len(buf))), off)
		next := make([]byte, int(n)+len(buf))
		if _, err := f.ReadAt(next[:n], off-n); err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", path, bare(err))
		}
		copy(next[n:], buf)
		buf, off, cut = next, off-n, cut+int(n)
	}
}
