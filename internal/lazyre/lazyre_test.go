package lazyre

import "testing"

func TestNew(t *testing.T) {
	re := New(`a+b`)
	if re() != re() {
		t.Error("a second call compiled the expression again")
	}
	if !re().MatchString("xaab") || re().MatchString("b") {
		t.Errorf("%v matches the wrong text", re())
	}
	bad := New(`(`)
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic on first use")
		}
	}()
	bad()
}
