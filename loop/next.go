package loop

import (
	"github.com/ralph-harness/ralph/prd"
)

// StoryDetail is a story of prd.json with its state, as `ralph next --json`
// and `ralph task list --json` print it.
type StoryDetail struct {
	ID                 string       `json:"id"`
	Title              string       `json:"title"`
	Description        string       `json:"description,omitempty"`
	AcceptanceCriteria []string     `json:"acceptanceCriteria,omitempty"`
	Priority           *int         `json:"priority,omitempty"` // absent when the story has none
	State              string       `json:"state"`
	Attempts           int          `json:"attempts"`
	Blocked            string       `json:"blocked,omitempty"`
	Failed             string       `json:"failed,omitempty"`
	DependsOn          []string     `json:"dependsOn,omitempty"`
	WaitsOn            []string     `json:"waitsOn,omitempty"` // of DependsOn, those not done
	Checks             []string     `json:"checks,omitempty"`
	Notes              string       `json:"notes,omitempty"`
	Answers            []prd.Answer `json:"answers,omitempty"`
}

func storyDetail(f *prd.File, s *prd.Story) StoryDetail {
	return StoryDetail{
		ID:                 s.ID,
		Title:              s.Title,
		Description:        s.Description,
		AcceptanceCriteria: s.AcceptanceCriteria,
		State:              f.State(s),
		Attempts:           s.Attempts,
		Blocked:            s.Blocked,
		Failed:             s.Failed,
		DependsOn:          s.DependsOn,
		WaitsOn:            f.WaitsOn(s),
		Checks:             s.Checks,
		Notes:              s.Notes,
		Answers:            s.Answers,
		Priority:           priority(s),
	}
}

// TaskList is prd.json alone, as `ralph task list` shows it: every story
// and its state, without the ledger.
type TaskList struct {
	Project string        `json:"project,omitempty"`
	Stories []StoryDetail `json:"stories"`
	Passing int           `json:"passing"`
	Total   int           `json:"total"`
	Next    string        `json:"next,omitempty"`
}

// Tasks reads prd.json, changing nothing. The stories show as the next
// loop will find them (see preview): one it will fail without a run (no
// attempts left under o.Config's limits) shows as failed.
func Tasks(o Options) (TaskList, error) {
	f, err := o.loadPRD()
	if err != nil {
		return TaskList{}, err
	}
	totals, err := o.preview(f)
	if err != nil {
		return TaskList{}, err
	}
	l := TaskList{Project: f.Project, Stories: []StoryDetail{}, Total: len(f.Stories), Passing: countPassing(f)}
	if next := f.Next(); next != nil && o.limit(totals, 0) == "" {
		l.Next = next.ID
	}
	for _, s := range f.Stories {
		l.Stories = append(l.Stories, storyDetail(f, s))
	}
	return l, nil
}

// NextReport says which story the next iteration would work on, or why
// none can run.
type NextReport struct {
	// Story is the next story; nil when none can run.
	Story *StoryDetail
	// Done is whether every story passes.
	Done bool
	// Reason says what stands in the way when no story can run and not
	// every story passes: the blocked, failed and waiting stories.
	Reason string
	// Blocked are the stories waiting for a person's answer.
	Blocked []StoryDetail
}

// Next reads prd.json and picks the story the next iteration would work
// on, as the loop does (with o.Config's limits), changing nothing.
func Next(o Options) (NextReport, error) {
	f, err := o.loadStories()
	if err != nil {
		return NextReport{}, err
	}
	totals, err := o.preview(f)
	if err != nil {
		return NextReport{}, err
	}
	var r NextReport
	for _, s := range f.Stories {
		if f.State(s) == prd.StateBlocked {
			r.Blocked = append(r.Blocked, storyDetail(f, s))
		}
	}
	switch next, limit := f.Next(), o.limit(totals, 0); {
	case f.Done():
		r.Done = true
	case next != nil && limit != "":
		r.Reason = limit
	case next != nil:
		d := storyDetail(f, next)
		r.Story = &d
	default:
		r.Reason = waitingOnHumans(f)
	}
	return r, nil
}
