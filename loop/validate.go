package loop

import (
	"errors"
	"fmt"
	"os"

	"github.com/ralph-harness/ralph/internal/plural"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/progress"
)

// Validation is what `ralph validate` found in the files besides errors.
type Validation struct {
	Stories  int
	Entries  int
	Torn     int
	Warnings []string
}

// Validate checks prd.json, progress.txt and the prompt template against
// cfg, reporting every problem at once. It changes nothing.
func Validate(o Options) (Validation, error) {
	var v Validation
	var errs []error
	if f, err := o.loadStories(); err != nil {
		errs = append(errs, err)
	} else {
		v.Stories = len(f.Stories)
		for _, s := range f.Stories {
			if s.Passes && (s.Blocked != "" || s.Failed != "") {
				v.Warnings = append(v.Warnings, fmt.Sprintf("%s: %s passes but is also marked blocked or failed", PRDFile, s.ID))
			}
		}
	}
	if _, err := o.template(); err != nil {
		errs = append(errs, err)
	}
	if len(o.Config.Checks) == 0 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: no [[checks]]: the judge can only take the agent's word", HarnessFile))
	}
	file, _, err := readbuf.OpenFile(o.path(ProgressFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: missing; `ralph loop` will create it", ProgressFile))
	case err != nil:
		errs = append(errs, err)
	default:
		head, entries, torn, err := progress.Parse(file)
		file.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", ProgressFile, err))
		}
		if len(head) > maxHead {
			v.Warnings = append(v.Warnings, fmt.Sprintf("%s: the head (the notes before the ledger) is %d bytes: only its first %d reach the agent's prompt", ProgressFile, len(head), maxHead))
		}
		v.Entries, v.Torn = len(entries), torn
		if torn > 0 {
			v.Warnings = append(v.Warnings, fmt.Sprintf("%s: %s skipped (an append was cut short)", ProgressFile, plural.Of(torn, "1 torn ledger entry", "%d torn ledger entries")))
		}
		switch m, err := progress.InFlight(o.path(ProgressFile)); {
		case err != nil:
			errs = append(errs, err)
		case m != nil && !m.Recorded():
			v.Warnings = append(v.Warnings, fmt.Sprintf("%s: iteration %d (%s) started its baseline checks and has no entry: a ralph loop is running them, or was stopped, and the next `ralph loop` drops it (the next iteration takes its number)", ProgressFile, m.Iteration, m.StoryID))
		case m != nil:
			v.Warnings = append(v.Warnings, fmt.Sprintf("%s: iteration %d (%s) started and has no entry: a ralph loop is running it, or was stopped, and the next `ralph loop` records it as interrupted", ProgressFile, m.Iteration, m.StoryID))
		}
	}
	if len(errs) > 0 {
		return v, &InputError{Err: errors.Join(errs...)}
	}
	return v, nil
}
