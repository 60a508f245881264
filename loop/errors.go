package loop

import (
	"errors"
	"fmt"

	"github.com/ralph-harness/ralph/agent"
)

// InputError wraps a problem with the user's files (prd.json, the prompt
// template): the loop stopped before changing anything.
type InputError struct {
	Err error
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// StopKind says why the loop stopped before every story passed.
type StopKind int

const (
	// LimitReached: a budget (iterations, time, cost, tokens) ran out.
	LimitReached StopKind = iota + 1
	// NeedsHuman: only blocked or failed stories are left.
	NeedsHuman
	// Interrupted: a signal stopped the loop.
	InterruptedStop
	// Stalled: the stall breaker failed the stories that were left.
	Stalled
)

// StopError reports that the loop stopped with stories left.
type StopError struct {
	Kind   StopKind
	Reason string
}

func (e *StopError) Error() string { return e.Reason }

// ErrLocked reports that another ralph holds the work directory.
var ErrLocked = errors.New("another ralph loop is running in this directory")

func stopf(kind StopKind, format string, args ...any) error {
	return &StopError{Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// AgentError reports a problem of the agent's model or service that retrying
// cannot fix, or that persisted through every retry.
type AgentError struct {
	Problem agent.Problem
}

func (e *AgentError) Error() string {
	return fmt.Sprintf("the agent reported a %s: %s", e.Problem.Kind, e.Problem.Message)
}
