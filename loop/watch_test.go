package loop

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSettlerWaitsAgainAfterAChange: watching, the loop waits for quiet
// once a round before it says that prd.json or harness.toml cannot be
// used, and again only when the files changed since the wait ended (an
// editor's next save, begun just then); a file that stays as it was is
// said to be wrong without another wait. Not watching, it never waits.
func TestSettlerWaitsAgainAfterAChange(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(PRDFile, `{"userStories": []}`)
	write(HarnessFile, "") // half saved
	o := &Options{Dir: dir, Watch: true}
	s := settler{o: o}
	ctx := context.Background()
	settle := func(want bool, when string) {
		t.Helper()
		again, err := s.settle(ctx)
		if err != nil || again != want {
			t.Fatalf("%s: settle = %v, %v; want %v", when, again, err, want)
		}
	}
	settle(true, "the round's first file that cannot be used")
	settle(false, "the same files again")
	write(HarnessFile, "[agent]\n") // the next save, begun as the wait ended
	settle(true, "the files changed since the wait")
	settle(false, "the same files again")
	s.reset()
	settle(true, "a new round")
	o.Watch = false
	s.reset()
	settle(false, "not watching")
}
