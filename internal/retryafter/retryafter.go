// Package retryafter reads the response headers in which a service says
// when to try again.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse reads when to try again from a response header that says so:
// retry-after-ms, a wait in milliseconds (OpenAI's and Anthropic's APIs
// send it besides retry-after), or retry-after, a wait in seconds or an
// HTTP date (RFC 9110). The header's name is matched whatever its case. ok
// is false for another header, for a value that is none of these, or for
// a wait too long to be one.
func Parse(name, value string, now time.Time) (t time.Time, ok bool) {
	value = strings.TrimSpace(value)
	switch strings.ToLower(name) {
	case "retry-after-ms":
		if ms, err := strconv.ParseFloat(value, 64); err == nil && ms >= 0 && ms < 1e12 {
			return now.Add(time.Duration(ms * float64(time.Millisecond))), true
		}
	case "retry-after":
		if s, err := strconv.ParseFloat(value, 64); err == nil && s >= 0 && s < 1e9 {
			return now.Add(time.Duration(s * float64(time.Second))), true
		}
		if t, err := http.ParseTime(value); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
