package agent

import "math"

// AddTokens adds token counts to sum, skipping a count below zero, which
// is no count (it would take from the run's totals, against max_tokens),
// and saturating rather than overflowing.
func AddTokens(sum int64, counts ...int64) int64 {
	for _, n := range counts {
		if n <= 0 {
			continue
		}
		if n >= math.MaxInt64-sum {
			return math.MaxInt64
		}
		sum += n
	}
	return sum
}
