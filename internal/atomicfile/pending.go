package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/ralph-harness/ralph/internal/durable"
)

// Pending is a file's new content, written and synced ahead of time into
// a file without a name, which no path leads to (see Prepare), or into a
// temp file beside it (see Stage): it takes the file's place when
// committed, and is gone without a trace when closed instead.
type Pending struct {
	path, target string
	f            *os.File // nil once committed or closed
	// named says that f is a temp file beside target, made by Stage.
	named bool
	// text is what Prepare wrote to f, which Commit checks f still holds.
	text [][]byte
}

// Prepare writes the pieces of text, one after another, as the new content
// of the file at path, as Write would, and syncs it, but leaves the file
// at path as it is until Commit. Where the system cannot make a file
// without a name (other systems than Linux, some file systems), it returns
// an error wrapping errors.ErrUnsupported, and nothing is written. text
// must not change until the Pending is committed or closed.
func Prepare(path string, perm os.FileMode, text ...[]byte) (*Pending, error) {
	target, mode, err := resolve(path, perm)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	f, err := openUnnamed(filepath.Dir(target), mode)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := fill(f, pieces(text), mode); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &Pending{path: path, target: target, f: f, text: text}, nil
}

// Stage is Prepare with the content in a temp file beside the file at
// path, as Write writes it: a path leads to it until it is committed or
// closed, but its commit neither links it nor syncs it again. It suits a
// process that nothing else shares the directory with meanwhile, unlike a
// write ahead of an agent's work.
func Stage(path string, perm os.FileMode, text ...[]byte) (*Pending, error) {
	return stage(path, perm, pieces(text))
}

// stage is Stage with what content writes.
func stage(path string, perm os.FileMode, content func(io.Writer) error) (*Pending, error) {
	target, mode, err := resolve(path, perm)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, tempPrefix(base))
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := fill(f, content, mode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &Pending{path: path, target: target, f: f, named: true}, nil
}

// Commit replaces the file with p's content, as WriteQueued does once its
// temp file is synced: the syncs that make the replacement durable are
// queued on q. The file at p's path must still be the one it was when
// Prepare ran (the same path, or a symlink to the same file); Commit
// changes nothing otherwise. A Pending is committed once at most.
func (p *Pending) Commit(q *durable.Queue) error {
	if p.f == nil {
		return fmt.Errorf("write %s: %w", p.path, fs.ErrClosed)
	}
	target, _, err := resolve(p.path, 0)
	if err == nil && target != p.target {
		err = fmt.Errorf("now a link to %s, not %s", target, p.target)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if p.named {
		return p.install(q)
	}
	// A file without a name can still be opened by a process of the
	// same user, through /proc: an agent running meanwhile could have
	// written its own content into it.
	if !p.holds() {
		return fmt.Errorf("write %s: %w", p.path, ErrChanged)
	}
	dir, base := filepath.Split(target)
	var tmp string
	for range 100 {
		tmp = filepath.Join(dir, tempPrefix(base)+strconv.FormatUint(rand.Uint64(), 36))
		if err = linkUnnamed(p.f, tmp); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	f := p.f
	p.f = nil
	if err := install(p.path, tmp, target, q, f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	return nil
}

// ErrChanged is Commit's error for a prepared file that no longer holds
// what Prepare wrote to it: something else wrote to it since.
var ErrChanged = errors.New("the file prepared was written to by another process")

// holds reports whether p's file holds what Prepare wrote to it, and
// nothing more.
func (p *Pending) holds() bool {
	info, err := p.f.Stat()
	if err != nil {
		return false
	}
	return readsAs(p.f, info.Size(), p.text, holdsBlock)
}

// holdsBlock is the most that holds reads at once: the file of a
// prd.json of a few hundred stories in one read, and a larger one in
// reads of a megabyte.
const holdsBlock = 1 << 20

// readsAs reports whether the size bytes that r holds are the pieces of
// text one after another. It reads r in blocks of up to block bytes,
// whatever the pieces' bounds: a prd.json's text comes in two pieces a
// story, which one read each would make hundreds of reads.
func readsAs(r io.ReaderAt, size int64, text [][]byte, block int) bool {
	total := int64(0)
	for _, t := range text {
		total += int64(len(t))
	}
	if size != total {
		return false
	}
	held := blocks.get(int(min(int64(block), size)), block)
	defer blocks.Put(held)
	buf := *held
	var off int64
	var t []byte // what is left of the piece being compared
	for off < size {
		got := buf[:min(int64(len(buf)), size-off)]
		if _, err := r.ReadAt(got, off); err != nil {
			return false
		}
		off += int64(len(got))
		for len(got) > 0 {
			for len(t) == 0 {
				t, text = text[0], text[1:]
			}
			n := min(len(t), len(got))
			if !bytes.Equal(got[:n], t[:n]) {
				return false
			}
			got, t = got[n:], t[n:]
		}
	}
	return true
}

// blockPool holds readsAs's blocks, used again: Commit compares prd.json's
// rewrite at every iteration of the loop, and a block made anew each time,
// the size of the file up to holdsBlock (100 kB at 200 stories, a megabyte
// at 10,000), was most of what an iteration allocated.
type blockPool struct{ sync.Pool } // of *[]byte

var blocks blockPool

// get returns a block of n bytes, to be put back with Put. A new one has
// room up to the next power of two, up to most: prd.json grows by a few
// bytes at every iteration, and a block of its size would fit it once.
func (p *blockPool) get(n, most int) *[]byte {
	if b, _ := p.Get().(*[]byte); b != nil && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, max(n, min(1<<bits.Len(uint(n)), most)))
	return &b
}

// install is Commit for a Pending made by Stage.
func (p *Pending) install(q *durable.Queue) error {
	f := p.f
	p.f = nil
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if err := install(p.path, f.Name(), p.target, q, nil); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	return nil
}

// Close lets go of p's content if it was not committed: the file at p's
// path stays as it is. It may be called any number of times, on a nil
// Pending too.
func (p *Pending) Close() {
	if p != nil && p.f != nil {
		p.f.Close()
		if p.named {
			os.Remove(p.f.Name())
		}
		p.f = nil
	}
}
