// Package plural picks the singular or plural form of a phrase for a count,
// so that messages read "1 story" and "2 stories".
package plural

import (
	"fmt"
	"strings"
)

// Of returns one when n is 1 and many otherwise, with n formatted in where
// the form holds a %d.
func Of(n int, one, many string) string {
	form := many
	if n == 1 {
		form = one
	}
	if strings.Contains(form, "%d") {
		return fmt.Sprintf(form, n)
	}
	return form
}
