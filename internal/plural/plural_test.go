package plural

import "testing"

func TestOf(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{{0, "0 stories"}, {1, "1 story"}, {2, "2 stories"}}
	for _, tt := range tests {
		if got := Of(tt.n, "%d story", "%d stories"); got != tt.want {
			t.Errorf("Of(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := Of(1, "the story", "all %d stories"); got != "the story" {
		t.Errorf("Of(1) without %%d = %q", got)
	}
}
