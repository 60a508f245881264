package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ralph-harness/ralph/internal/durable"
)

// Pending is a file's new content, written and synced ahead of time into
// a file without a name, which no path leads to: it takes the file's place
// when committed, and is gone without a trace when closed instead.
type Pending struct {
	path, target string
	f            *os.File // nil once committed or closed
}

// Prepare writes the pieces of text, one after another, as the new content
// of the file at path, as Write would, and syncs it, but leaves the file
// at path as it is until Commit. Where the system cannot make a file
// without a name (other systems than Linux, some file systems), it returns
// an error wrapping errors.ErrUnsupported, and nothing is written.
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
	return &Pending{path: path, target: target, f: f}, nil
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

// Close lets go of p's content if it was not committed: the file at p's
// path stays as it is. It may be called any number of times, on a nil
// Pending too.
func (p *Pending) Close() {
	if p != nil && p.f != nil {
		p.f.Close()
		p.f = nil
	}
}
