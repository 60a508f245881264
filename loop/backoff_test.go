package loop

import (
	"math"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/agent"
)

func TestBackoff(t *testing.T) {
	same := func(d time.Duration) time.Duration { return d }
	tests := []struct {
		n    int
		want time.Duration
	}{{1, 30 * time.Second}, {2, time.Minute}, {3, 2 * time.Minute}, {7, 30 * time.Minute}, {50, 30 * time.Minute}}
	for _, tt := range tests {
		if got := backoff(30*time.Second, tt.n, same); got != tt.want {
			t.Errorf("backoff(30s, %d) = %v, want %v", tt.n, got, tt.want)
		}
	}
	for range 100 {
		if got := backoff(10*time.Second, 1, nil); got < 8*time.Second || got > 12*time.Second {
			t.Fatalf("backoff with jitter = %v, want within 20%% of 10s", got)
		}
	}
	// The jitter spreads the capped waits below the cap, never past it,
	// and not onto it: waits at the cap itself would be in step.
	atCap := 0
	for range 100 {
		got := backoff(30*time.Second, 50, nil)
		if got < 24*time.Minute || got > 30*time.Minute {
			t.Fatalf("backoff(30s, 50) with jitter = %v, want within 20%% below 30m", got)
		}
		if got == 30*time.Minute {
			atCap++
		}
	}
	if atCap > 5 {
		t.Errorf("%d of 100 capped waits were the cap itself", atCap)
	}
	// A base longer than the cap is the cap: it is what the person asked.
	if got := backoff(time.Hour, 3, same); got != time.Hour {
		t.Errorf("backoff(1h, 3) = %v, want 1h", got)
	}
}

// TestBackoffHuge: a base as long as a Duration goes (retry_backoff =
// "2562047h"), spread by the jitter, is no wait that overflowed into a
// negative or short one: it is cut to agent.MaxWait, as a reset the agent
// names is, and spread below it.
func TestBackoffHuge(t *testing.T) {
	for _, base := range []time.Duration{math.MaxInt64, 2540400 * time.Hour, agent.MaxWait + 1} {
		for range 100 {
			if got := backoff(base, 3, nil); got < agent.MaxWait*8/10 || got > agent.MaxWait {
				t.Fatalf("backoff(%v, 3) with jitter = %v, want within 20%% below %v", base, got, agent.MaxWait)
			}
		}
	}
}
