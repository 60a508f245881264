package loop

import (
	"time"

	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
)

// StoryReport is one story's state for `ralph status`.
type StoryReport struct {
	ID            string   `json:"id"`
	Title         string   `json:"title"`
	Priority      *int     `json:"priority,omitempty"` // absent when the story has none
	State         string   `json:"state"`
	Attempts      int      `json:"attempts"`
	LastOutcome   string   `json:"lastOutcome,omitempty"`
	LastIteration int      `json:"lastIteration,omitempty"`
	Blocked       string   `json:"blocked,omitempty"`
	Failed        string   `json:"failed,omitempty"`
	DependsOn     []string `json:"dependsOn,omitempty"`
	WaitsOn       []string `json:"waitsOn,omitempty"` // of DependsOn, those not done
	// Answers are the questions a person answered, oldest first.
	Answers []prd.Answer `json:"answers,omitempty"`
}

// Totals are the run's totals as the ledger carries them.
type Totals struct {
	Iterations     int     `json:"iterations"`
	Tokens         int64   `json:"tokens"`
	CostUSD        float64 `json:"costUSD"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
}

// totalsOf reports the ledger's running totals.
func totalsOf(t progress.Totals) Totals {
	return Totals{Iterations: t.Iterations, Tokens: t.Tokens, CostUSD: t.CostUSD, ElapsedSeconds: t.Elapsed.Seconds()}
}

// StatusReport is the state of the run: every story and the totals.
type StatusReport struct {
	Project string        `json:"project,omitempty"`
	Stories []StoryReport `json:"stories"`
	Passing int           `json:"passing"`
	Total   int           `json:"total"`
	Next    string        `json:"next,omitempty"`
	// Running is the iteration a running loop has under way; nil when no
	// loop runs one. Next is empty then: the story after it depends on
	// the verdict.
	Running *Running `json:"running,omitempty"`
	Totals  Totals   `json:"totals"`
	// Warnings are for a person, on stderr: an iteration a stopped ralph
	// left open (see openIteration).
	Warnings []string `json:"-"`
}

// Running is the iteration a running `ralph loop` has under way, from its
// start marker in the ledger.
type Running struct {
	Story     string    `json:"story"`
	Iteration int       `json:"iteration"`
	Attempt   int       `json:"attempt"`
	Since     time.Time `json:"since"`
	// ElapsedSeconds is the time since then, by Options.Now.
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	// Baseline is true while the story's baseline checks run, before the
	// agent starts.
	Baseline bool `json:"baseline,omitempty"`
}

// Status reads prd.json and the end of the ledger, changing nothing. A
// story the loop will fail without a run shows as failed, as in Tasks.
func Status(o Options) (StatusReport, error) {
	f, err := o.loadPRD()
	if err != nil {
		return StatusReport{}, err
	}
	totals, err := o.preview(f)
	if err != nil {
		return StatusReport{}, err
	}
	r := StatusReport{Project: f.Project, Total: len(f.Stories), Passing: countPassing(f)}
	if w := LedgerConflict(o.Dir); w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	if next := f.Next(); next != nil {
		if limit := o.limit(totals, 0); limit != "" {
			r.Warnings = append(r.Warnings, limit+": the next `ralph loop` runs no story")
		} else {
			r.Next = next.ID
		}
	}
	// Each story's last outcome is in its last entry's start marker: the
	// entries are not parsed, but the newest, for the run's totals.
	// Stories since removed from prd.json have entries too: the scan stops
	// once every story of the file has its own.
	last := map[string]progress.Head{}
	found := 0
	var newest *progress.Head
	err = progress.TailHeads(o.path(ProgressFile), maxHistoryScan, func(h progress.Head) bool {
		if newest == nil {
			newest = &h
		}
		if _, ok := last[h.StoryID]; !ok {
			last[h.StoryID] = h
			if f.Story(h.StoryID) != nil {
				found++
			}
		}
		return found < len(f.Stories)
	})
	if err != nil {
		return StatusReport{}, err
	}
	if newest != nil {
		r.Totals = totalsOf(newest.Entry().RunTotals())
	}
	r.Stories = make([]StoryReport, 0, len(f.Stories))
	for _, s := range f.Stories {
		sr := storyReport(f, s)
		if h, ok := last[s.ID]; ok {
			sr.LastOutcome, sr.LastIteration = h.Outcome, h.Iteration
		}
		r.Stories = append(r.Stories, sr)
	}
	// An iteration a running loop has is shown as such; one a stopped
	// ralph left open decides what the next loop does.
	if m, err := progress.InFlight(o.path(ProgressFile)); err == nil && m != nil {
		if note, running := o.openIteration(m); running {
			r.Running = &Running{Story: m.StoryID, Iteration: m.Iteration, Attempt: m.Attempt, Since: m.Time,
				ElapsedSeconds: max(o.now().Sub(m.Time), 0).Seconds(), Baseline: m.TakingBaseline}
			r.Next = ""
		} else {
			r.Warnings = append(r.Warnings, note)
		}
	}
	return r, nil
}

func storyReport(f *prd.File, s *prd.Story) StoryReport {
	return StoryReport{
		ID:        s.ID,
		Title:     s.Title,
		Priority:  priority(s),
		State:     f.State(s),
		Attempts:  s.Attempts,
		Blocked:   s.Blocked,
		Failed:    s.Failed,
		DependsOn: s.DependsOn,
		WaitsOn:   f.WaitsOn(s),
		Answers:   s.Answers,
	}
}

// priority is s's priority for JSON: nil when it has none, so that a
// priority of 0 (which runs before the others) is told from none.
func priority(s *prd.Story) *int {
	if !s.HasPriority {
		return nil
	}
	p := s.Priority
	return &p
}
