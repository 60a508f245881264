package retryafter

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, value string
		want        time.Time
		ok          bool
	}{
		{"retry-after-ms", "1500", now.Add(1500 * time.Millisecond), true},
		{"Retry-After-Ms", " 250.5 ", now.Add(250500 * time.Microsecond), true},
		{"retry-after", "30", now.Add(30 * time.Second), true},
		{"RETRY-AFTER", "0", now, true},
		{"retry-after", "Wed, 21 Oct 2026 07:28:00 GMT", time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC), true},
		{"retry-after", "soon", time.Time{}, false},
		{"retry-after", "-5", time.Time{}, false},
		{"retry-after", "1e308", time.Time{}, false},
		{"retry-after-ms", "Wed, 21 Oct 2026 07:28:00 GMT", time.Time{}, false},
		{"x-ratelimit-reset", "30", time.Time{}, false},
	} {
		got, ok := Parse(tc.name, tc.value, now)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("Parse(%q, %q) = %v, %v; want %v, %v", tc.name, tc.value, got, ok, tc.want, tc.ok)
		}
	}
}
