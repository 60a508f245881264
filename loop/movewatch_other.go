//go:build !linux && !darwin

package loop

// moveWatch watches nothing where ralph knows no cheap way to be told that
// a directory moved: only the stamps taken before and after the checks
// tell a directory swapped, and one put back goes unseen.
type moveWatch struct{}

// watchMoves watches nothing (see moveWatch).
func watchMoves([]string) (*moveWatch, error) { return nil, nil }

func (*moveWatch) moved() ([]int, error) { return nil, nil }

func (*moveWatch) close() {}
