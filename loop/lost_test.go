package loop

import "testing"

// TestJudgeLost: a change ralph could not undo blocks the story, whatever
// else happened, with a question that names it and says what to do, the
// agent's own question kept.
func TestJudgeLost(t *testing.T) {
	lost := []string{"tests/t.sh: the agent deleted this test file; past the 32 MiB of guarded files ralph keeps: " + lostEnd}
	if !isLost(lost[0]) || isLost("tests/t.sh: the agent deleted this test file; ralph restored it") {
		t.Fatal("isLost tells the lines apart wrong")
	}
	for _, c := range []Claim{{Done: true}, {}, {Blocked: true, Question: "Which DB?"}} {
		v := Judge(Evidence{Claim: c, Tampered: true, Lost: lost, Attempt: 5, MaxAttempts: 5, Iteration: 7, StoryID: "US-001"})
		want := lostPrefix(7) + "tests/t.sh: the agent deleted this test file; past the 32 MiB of guarded files ralph keeps. Put it back as it was, then run: ralph task answer US-001 \"…\" (until then the story cannot pass)"
		if c.Blocked {
			want += ". The agent asked too: Which DB?"
		}
		if v.Outcome != Blocked || v.Question != want {
			t.Errorf("Judge with claim %+v = %s, %q; want blocked, %q", c, v.Outcome, v.Question, want)
		}
	}
}
