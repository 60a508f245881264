package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ralph-harness/ralph/internal/durable"
)

// failSync makes the n-th call of syncFile (1-based) fail with errSync for the
// rest of the test.
func failSync(t testing.TB, n int) {
	t.Helper()
	calls := 0
	orig := syncFile
	syncFile = func(f *os.File) error {
		calls++
		if calls == n {
			return errSync
		}
		return orig(f)
	}
	t.Cleanup(func() { syncFile = orig })
}

var errSync = errors.New("injected sync failure")

// dirNames lists the names in dir, sorted.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func writeOld(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is subject to the umask.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func checkFile(t testing.TB, path, wantContent string, wantMode os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != wantContent {
		t.Errorf("content of %s: got %q, want %q", path, got, wantContent)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != wantMode {
		t.Errorf("mode of %s: got %v, want %v", path, fi.Mode(), wantMode)
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name     string
		old      string // "" means no old file
		oldMode  os.FileMode
		perm     os.FileMode
		wantMode os.FileMode
	}{
		{name: "new file gets perm", perm: 0o640, wantMode: 0o640},
		{name: "replace keeps the old mode", old: "old content\n", oldMode: 0o600, perm: 0o644, wantMode: 0o600},
		{name: "replace executable", old: "#!/bin/sh\n", oldMode: 0o755, perm: 0o644, wantMode: 0o755},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "prd.json")
			if tt.old != "" {
				writeOld(t, path, tt.old, tt.oldMode)
			}
			if err := Write(path, []byte("new content\n"), tt.perm); err != nil {
				t.Fatalf("Write: %v", err)
			}
			checkFile(t, path, "new content\n", tt.wantMode)
			if got, want := dirNames(t, dir), []string{"prd.json"}; !slices.Equal(got, want) {
				t.Errorf("directory holds %q, want %q", got, want)
			}
		})
	}
}

func TestWriteRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	writeOld(t, "prd.json", "old\n", 0o644)
	if err := Write("prd.json", []byte("new\n"), 0o644); err != nil {
		t.Fatalf("Write: %v", err)
	}
	checkFile(t, "prd.json", "new\n", 0o644)
	if got, want := dirNames(t, "."), []string{"prd.json"}; !slices.Equal(got, want) {
		t.Errorf("directory holds %q, want %q", got, want)
	}
}

// TestWriteFailureKeepsOld proves the point of the package: when the write fails,
// the old file is intact byte for byte and no temp file is left behind.
func TestWriteFailureKeepsOld(t *testing.T) {
	const old = "{\n  \"old\": true\n}\n"
	tests := []struct {
		name   string
		base   string
		inject func(t testing.TB)
		wantIs error // when non-nil, errors.Is(err, wantIs) must hold
	}{
		{
			name:   "sync of the temp file fails",
			base:   "prd.json",
			inject: func(t testing.TB) { failSync(t, 1) },
			wantIs: errSync,
		},
		{
			// A real failure, no seam: the old name is legal but the temp name,
			// which is longer, exceeds the 255-byte limit on a file name.
			name:   "temp file cannot be created",
			base:   strings.Repeat("p", 250),
			inject: func(testing.TB) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.base)
			writeOld(t, path, old, 0o640)
			tt.inject(t)

			err := Write(path, []byte("torn"), 0o644)
			if err == nil {
				t.Fatal("Write succeeded, want an error")
			}
			if want := "write " + path + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q does not start with %q", err, want)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q does not wrap %q", err, tt.wantIs)
			}
			checkFile(t, path, old, 0o640)
			if got, want := dirNames(t, dir), []string{tt.base}; !slices.Equal(got, want) {
				t.Errorf("directory holds %q, want %q", got, want)
			}
		})
	}
}

// TestWriteDirSyncFails covers the one failure after the rename: the new content
// is in place, but the caller must hear that it may not be durable.
func TestWriteDirSyncFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	writeOld(t, path, "old\n", 0o644)
	failSync(t, 2)
	err := Write(path, []byte("new\n"), 0o644)
	if !errors.Is(err, errSync) {
		t.Fatalf("Write: got error %v, want %v", err, errSync)
	}
	checkFile(t, path, "new\n", 0o644)
	if got, want := dirNames(t, dir), []string{"prd.json"}; !slices.Equal(got, want) {
		t.Errorf("directory holds %q, want %q", got, want)
	}
}

func TestWriteSymlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "real", "prd.json")
	writeOld(t, target, "old\n", 0o600)
	link := filepath.Join(dir, "prd.json")
	if err := os.Symlink(filepath.Join("real", "prd.json"), link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("new\n"), 0o644); err != nil {
		t.Fatalf("Write: %v", err)
	}
	fi, err := os.Lstat(link)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symlink: mode %v", link, fi.Mode())
	}
	checkFile(t, target, "new\n", 0o600)
	if got, want := dirNames(t, filepath.Join(dir, "real")), []string{"prd.json"}; !slices.Equal(got, want) {
		t.Errorf("directory holds %q, want %q", got, want)
	}
}

func TestWriteRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	err := Write(path, []byte("new\n"), 0o644)
	if want := "write " + path + ": not a regular file"; err == nil || err.Error() != want {
		t.Errorf("Write: got error %v, want %q", err, want)
	}
	if got, want := dirNames(t, dir), []string{"prd.json"}; !slices.Equal(got, want) {
		t.Errorf("directory holds %q, want %q", got, want)
	}
}

// TestRemoveTemps: the temp files a killed Write leaves go, and nothing else.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	writeOld(t, path, "old\n", 0o644)
	keep := []string{"prd.json", ".harness.toml.tmp-1", "prd.json.tmp-2", ".prd.json.tmp", ".prd.jsonx.tmp-3", "notes"}
	leftovers := []string{".prd.json.tmp-123", ".prd.json.tmp-4567"}
	for _, name := range append(keep[1:], leftovers...) {
		writeOld(t, filepath.Join(dir, name), "x", 0o600)
	}
	// A directory of a temp file's name is no temp file of Write's.
	if err := os.Mkdir(filepath.Join(dir, ".prd.json.tmp-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, ".prd.json.tmp-dir")
	removed, err := RemoveTemps(path)
	if err != nil {
		t.Fatalf("RemoveTemps: %v", err)
	}
	var want []string
	for _, name := range leftovers {
		want = append(want, filepath.Join(dir, name))
	}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	slices.Sort(keep)
	if got := dirNames(t, dir); !slices.Equal(got, keep) {
		t.Errorf("directory holds %q, want %q", got, keep)
	}
	checkFile(t, path, "old\n", 0o644)

	// Nothing left: nothing to do.
	if removed, err := RemoveTemps(path); err != nil || len(removed) != 0 {
		t.Errorf("second RemoveTemps = %q, %v; want nothing", removed, err)
	}
}

// TestRemoveTempsSymlink: a Write through a link makes its temp file beside
// the link's target, so that is where leftovers are looked for.
func TestRemoveTempsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	writeOld(t, filepath.Join(real, "prd.json"), "old\n", 0o644)
	writeOld(t, filepath.Join(real, ".prd.json.tmp-9"), "x", 0o600)
	link := filepath.Join(dir, "prd.json")
	if err := os.Symlink(filepath.Join("real", "prd.json"), link); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveTemps(link)
	if want := []string{filepath.Join(real, ".prd.json.tmp-9")}; err != nil || !slices.Equal(removed, want) {
		t.Errorf("RemoveTemps = %q, %v; want %q", removed, err, want)
	}
}

// TestRemoveTempsMissing: no file and no temp files is not an error.
func TestRemoveTempsMissing(t *testing.T) {
	removed, err := RemoveTemps(filepath.Join(t.TempDir(), "prd.json"))
	if err != nil || len(removed) != 0 {
		t.Errorf("RemoveTemps = %q, %v; want nothing", removed, err)
	}
}

// TestWriteQueued: the file is replaced when WriteQueued returns, and the
// directory's sync, the one that makes the rename durable, is the queue's:
// its failure is reported by Wait.
func TestWriteQueued(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	writeOld(t, path, "old\n", 0o644)
	failSync(t, 2) // the temp file's sync is the first, the directory's the second
	var q durable.Queue
	if err := WriteQueued(path, 0o644, &q, []byte("new\n")); err != nil {
		t.Fatalf("WriteQueued: %v", err)
	}
	checkFile(t, path, "new\n", 0o644)
	err := q.Wait()
	if !errors.Is(err, errSync) {
		t.Errorf("Wait = %v, want the directory's sync failure", err)
	}
	if want := "write " + path + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
}

// TestWritePieces: the file holds the pieces one after another, small and
// large, however many there are.
func TestWritePieces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	var text [][]byte
	var want strings.Builder
	for i := range 20_000 {
		p := []byte(fmt.Sprintf("piece %d,", i))
		if i == 7_000 {
			p = bytes.Repeat([]byte{'x'}, 200_000) // larger than a write
		}
		text = append(text, p, nil)
		want.Write(p)
	}
	if err := WriteQueued(path, 0o600, nil, text...); err != nil {
		t.Fatalf("WriteQueued: %v", err)
	}
	checkFile(t, path, want.String(), 0o600)
}

// TestWriteback: a large file is handed to the disk a part at a time as it
// is written, each part once and in order; a small one is left to the
// sync.
func TestWriteback(t *testing.T) {
	type part struct{ off, n int64 }
	var parts []part
	orig := startWriteback
	startWriteback = func(f *os.File, off, n int64) {
		parts = append(parts, part{off, n})
		orig(f, off, n)
	}
	t.Cleanup(func() { startWriteback = orig })

	dir := t.TempDir()
	small := bytes.Repeat([]byte("s"), writebackPart-1)
	if err := Write(filepath.Join(dir, "small"), small, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(parts) != 0 {
		t.Fatalf("a file of %d bytes: writeback %v, want none", len(small), parts)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), (5*writebackPart+12345)/16)
	path := filepath.Join(dir, "big")
	if err := WriteQueued(path, 0o644, nil, big[:100], big[100:3*writebackPart], big[3*writebackPart:]); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, string(big), 0o644)
	var at int64
	for _, p := range parts {
		if p.off != at || p.n != writebackPart {
			t.Fatalf("writeback %v: want consecutive parts of %d bytes from 0, a long piece cut into parts", parts, writebackPart)
		}
		at += p.n
	}
	if rest := int64(len(big)) - at; len(parts) == 0 || rest < 0 || rest >= writebackPart {
		t.Fatalf("writeback %v of %d bytes: want all but less than a part handed to the disk", parts, len(big))
	}
}

// TestCopy: the file gets what the reader has, to its end, and keeps its
// mode; a reader that fails leaves the file as it was.
func TestCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	writeOld(t, path, "old\n", 0o640)
	big := strings.Repeat("an entry of the ledger\n", 50_000)
	if err := Copy(path, strings.NewReader(big), 0o644); err != nil {
		t.Fatalf("Copy: %v", err)
	}
	checkFile(t, path, big, 0o640)
	if err := Copy(path, io.MultiReader(strings.NewReader("torn"), iotest.ErrReader(errSync)), 0o644); !errors.Is(err, errSync) {
		t.Errorf("Copy from a failing reader: %v, want its error", err)
	}
	checkFile(t, path, big, 0o640)
}

// checkClosed closes p, which holds a new content for the file at path,
// twice, and checks that it leaves no trace: the file holds want still,
// with mode, the file's directory holds it alone, and p has nothing left
// to commit.
func checkClosed(t testing.TB, p *Pending, path, want string, mode os.FileMode) {
	t.Helper()
	p.Close()
	p.Close()
	checkFile(t, path, want, mode)
	if got, w := dirNames(t, filepath.Dir(path)), []string{filepath.Base(path)}; !slices.Equal(got, w) {
		t.Errorf("after Close, the directory holds %q, want %q", got, w)
	}
	if err := p.Commit(nil); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Commit after Close: %v, want fs.ErrClosed", err)
	}
	checkFile(t, path, want, mode)
}

// TestStage: a staged content is in a temp file beside the file, which is
// untouched until the content is committed; then the file holds it, with
// its mode, and the temp file is gone. Closed instead, or committed after
// the file's link was pointed elsewhere, it leaves no trace.
func TestStage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	writeOld(t, path, "old\n", 0o640)
	p, err := Stage(path, 0o644, []byte("new"), []byte("\n"))
	if err != nil {
		t.Fatalf("Stage: %v", err)
	}
	checkFile(t, path, "old\n", 0o640)
	names := dirNames(t, dir)
	if len(names) != 2 || !strings.HasPrefix(names[0], tempPrefix("prd.json")) {
		t.Fatalf("after Stage, the directory holds %q, want prd.json and a temp file", names)
	}
	checkFile(t, filepath.Join(dir, names[0]), "new\n", 0o640)
	var q durable.Queue
	if err := p.Commit(&q); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := q.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	checkFile(t, path, "new\n", 0o640)
	if got, want := dirNames(t, dir), []string{"prd.json"}; !slices.Equal(got, want) {
		t.Errorf("after Commit, the directory holds %q, want %q", got, want)
	}
	if err := p.Commit(nil); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("a second Commit: %v, want fs.ErrClosed", err)
	}

	p, err = Stage(path, 0o644, []byte("newer\n"))
	if err != nil {
		t.Fatalf("Stage: %v", err)
	}
	checkClosed(t, p, path, "new\n", 0o640)

	link := filepath.Join(dir, "link.json")
	if err := os.Symlink("prd.json", link); err != nil {
		t.Fatal(err)
	}
	if p, err = Stage(link, 0o644, []byte("newest\n")); err != nil {
		t.Fatalf("Stage: %v", err)
	}
	writeOld(t, filepath.Join(dir, "other.json"), "other\n", 0o644)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("other.json", link); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(nil); err == nil || !strings.Contains(err.Error(), "now a link to") {
		t.Errorf("Commit through a link pointed elsewhere: %v, want an error", err)
	}
	p.Close()
	checkFile(t, path, "new\n", 0o640)
	checkFile(t, filepath.Join(dir, "other.json"), "other\n", 0o644)
	if got, want := dirNames(t, dir), []string{"link.json", "other.json", "prd.json"}; !slices.Equal(got, want) {
		t.Errorf("the directory holds %q, want %q", got, want)
	}
}

// TestReadsAs: a file's bytes are compared with the pieces of a text in
// blocks that start and end anywhere in them, empty pieces among them,
// and every byte counts, the size too.
func TestReadsAs(t *testing.T) {
	text := [][]byte{[]byte("{\n  "), nil, []byte(`"stories": [`), []byte("a"), nil, []byte(`{"id": "US-1"}`), []byte("]}\n")}
	whole := bytes.Join(text, nil)
	for _, block := range []int{1, 2, 3, 7, 16, 1 << 20} {
		if !readsAs(bytes.NewReader(whole), int64(len(whole)), text, block) {
			t.Errorf("block %d: the text itself does not read as its pieces", block)
		}
		for i := range whole {
			changed := bytes.Clone(whole)
			changed[i] ^= 1
			if readsAs(bytes.NewReader(changed), int64(len(changed)), text, block) {
				t.Errorf("block %d: byte %d changed, and the file still reads as the text", block, i)
			}
		}
		longer := append(bytes.Clone(whole), '\n')
		if readsAs(bytes.NewReader(longer), int64(len(longer)), text, block) {
			t.Errorf("block %d: a byte more, and the file still reads as the text", block)
		}
		if readsAs(bytes.NewReader(whole[:len(whole)-1]), int64(len(whole)-1), text, block) {
			t.Errorf("block %d: a byte less, and the file still reads as the text", block)
		}
		// A size said wrongly: the file is read short of it.
		if readsAs(bytes.NewReader(whole[:len(whole)-1]), int64(len(whole)), text, block) {
			t.Errorf("block %d: a file shorter than its size reads as the text", block)
		}
	}
	if !readsAs(bytes.NewReader(nil), 0, [][]byte{nil, {}}, 8) {
		t.Error("an empty file does not read as an empty text")
	}
}

// countingReader counts the reads made of it.
type countingReader struct {
	*bytes.Reader
	reads int
}

func (r *countingReader) ReadAt(p []byte, off int64) (int, error) {
	r.reads++
	return r.Reader.ReadAt(p, off)
}

// TestReadsAsInBlocks: the pieces' bounds make no reads of their own. A
// prd.json of 200 stories comes in 400 pieces, which Commit compares at
// every iteration of the loop: it reads them in one read.
func TestReadsAsInBlocks(t *testing.T) {
	var text [][]byte
	for i := range 200 {
		text = append(text, bytes.Repeat([]byte{byte('a' + i%26)}, 480), []byte(",\n    "))
	}
	whole := bytes.Join(text, nil)
	r := &countingReader{Reader: bytes.NewReader(whole)}
	if !readsAs(r, int64(len(whole)), text, holdsBlock) {
		t.Fatal("the text does not read as its pieces")
	}
	if r.reads != 1 {
		t.Errorf("%d bytes in %d pieces took %d reads, want 1", len(whole), len(text), r.reads)
	}
}

// TestReadsAsAllocates: the block that readsAs reads into is used again,
// not made anew at each call: Commit compares prd.json's rewrite at every
// iteration of the loop, and a fresh block the size of the file (100 kB at
// 200 stories, a megabyte at 10,000) was most of what an iteration
// allocated. The file grows by a few bytes at each iteration (a story's
// status recorded), which must not take a new block each time either.
func TestReadsAsAllocates(t *testing.T) {
	const runs = 20
	var texts [runs + 1][][]byte // AllocsPerRun calls once more to warm up
	for n := range texts {
		for i := range 200 {
			texts[n] = append(texts[n], bytes.Repeat([]byte{byte('a' + i%26)}, 480), []byte(",\n    "))
		}
		texts[n] = append(texts[n], bytes.Repeat([]byte("}"), 20*n))
	}
	wholes := make([]*bytes.Reader, len(texts))
	for n, text := range texts {
		wholes[n] = bytes.NewReader(bytes.Join(text, nil))
	}
	n, held := 0, true
	allocs := testing.AllocsPerRun(runs, func() {
		r := wholes[n]
		held = held && readsAs(r, r.Size(), texts[n], holdsBlock)
		n++
	})
	if !held {
		t.Fatal("a text does not read as its pieces")
	}
	if allocs != 0 {
		t.Errorf("readsAs of %d to %d bytes: %v allocations a call, want 0", wholes[0].Size(), wholes[runs].Size(), allocs)
	}
}
