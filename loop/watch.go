package loop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ralph-harness/ralph/internal/readbuf"
)

// debounce is how long the watch waits for a burst of writes (an editor's
// save) to settle before it acts.
const debounce = 100 * time.Millisecond

// grace is how long the directory must stay quiet before a file that
// cannot be used (prd.json missing, harness.toml half written) is taken to
// be so: an editor's save can leave it that way for a moment.
const grace = 500 * time.Millisecond

// maxSettle bounds the wait for quiet: a file written without pause is read
// as it is then.
const maxSettle = 10 * time.Second

// waitForChange blocks until prd.json or harness.toml changes, or ctx ends.
// It watches the directory, not the files, so that editors that save by
// renaming a new file over the old one are seen too.
func (o *Options) waitForChange(ctx context.Context, why string) error {
	before := o.fingerprint()
	w, err := o.watchDir()
	if err != nil {
		return err
	}
	defer w.Close()
	o.emit(Event{Event: EventWaiting, Reason: "watch", Note: why,
		Message: fmt.Sprintf("%s; watching %s and %s for changes", why, PRDFile, HarnessFile)})
	// A change made before the watch began is not missed, but it may be a
	// save still under way: it settles first, as one seen would.
	var settle <-chan time.Time
	if !bytes.Equal(o.fingerprint(), before) {
		settle = time.After(debounce)
	}
	for {
		switch ev, err := o.nextEvent(ctx, w, settle); {
		case err != nil:
			return err
		case ev == watchEnded:
			return nil
		case ev == fileChanged:
			settle = time.After(debounce)
		case !bytes.Equal(o.fingerprint(), before):
			return nil
		default:
			settle = nil
		}
	}
}

// waitQuiet blocks until neither prd.json nor harness.toml has changed for
// grace (or for maxSettle, however often they change), or ctx ends. The
// loop calls it, watching, before it says that one of them cannot be
// used: read again then, a file an editor was saving is whole.
func (o *Options) waitQuiet(ctx context.Context) error {
	w, err := o.watchDir()
	if err != nil {
		return err
	}
	defer w.Close()
	end := time.Now().Add(maxSettle)
	for {
		switch ev, err := o.nextEvent(ctx, w, time.After(min(grace, time.Until(end)))); {
		case err != nil:
			return err
		case ev != fileChanged:
			return nil
		}
	}
}

// settler waits, between iterations, for an editor's save of prd.json or
// harness.toml to end before the loop says that one cannot be used: once
// a round, and again only when the files changed since the directory went
// quiet (a save that began just as the wait ended), so that a file that
// stays wrong is said to be without waiting for ever.
type settler struct {
	o       *Options
	settled bool   // the round waited
	quiet   []byte // the files' fingerprint when the wait ended
}

// settle waits for quiet (see waitQuiet) when the round is to begin again
// rather than say what is wrong: true then. It waits only when watching.
func (s *settler) settle(ctx context.Context) (bool, error) {
	if !s.o.Watch || s.settled && bytes.Equal(s.o.fingerprint(), s.quiet) {
		return false, nil
	}
	s.settled = true
	err := s.o.waitQuiet(ctx)
	s.quiet = s.o.fingerprint()
	return true, err
}

// reset begins a new round: the files read well, or what was wrong was
// said.
func (s *settler) reset() { s.settled, s.quiet = false, nil }

// watchDir watches the work directory; the caller closes the watcher.
func (o *Options) watchDir() (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err == nil {
		if err = w.Add(o.Dir); err != nil {
			w.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", o.Dir, err)
	}
	return w, nil
}

// What nextEvent saw.
const (
	fileChanged = iota // prd.json or harness.toml
	timerFired
	watchEnded // the watcher closed
)

// nextEvent waits for the next thing of note: an event of w about prd.json
// or harness.toml, timer firing (never, when nil), or w's end. An error of
// w's is returned, and ctx's end as an interruption.
func (o *Options) nextEvent(ctx context.Context, w *fsnotify.Watcher, timer <-chan time.Time) (int, error) {
	for {
		select {
		case <-ctx.Done():
			return 0, stopf(InterruptedStop, "interrupted while watching for changes")
		case ev, ok := <-w.Events:
			if !ok {
				return watchEnded, nil
			}
			if watched(ev) {
				return fileChanged, nil
			}
		case err, ok := <-w.Errors:
			if ok {
				return 0, fmt.Errorf("watch %s: %w", o.Dir, err)
			}
		case <-timer:
			return timerFired, nil
		}
	}
}

// watched reports whether ev is about a file the watch looks at.
func watched(ev fsnotify.Event) bool {
	name := filepath.Base(ev.Name)
	return name == PRDFile || name == HarnessFile
}

// fingerprint sums what the watch looks at.
func (o *Options) fingerprint() []byte {
	h := sha256.New()
	for _, name := range []string{PRDFile, HarnessFile} {
		data, _ := readbuf.ReadFile(nil, o.path(name))
		fmt.Fprintf(h, "%d:", len(data))
		h.Write(data)
	}
	return h.Sum(nil)
}

// harnessSum sums harness.toml as it is now, and the prompt template it
// names, part of the settings too; nil when harness.toml cannot be read. A
// template that cannot be read sums as empty: the reload says why.
func (o *Options) harnessSum() []byte {
	buf := o.buffers()
	data, err := readbuf.ReadFile(buf.now, o.path(HarnessFile))
	buf.now = data
	if err != nil {
		return nil
	}
	h := sha256.New()
	h.Write(data)
	if path := o.Config.TemplatePath(o.Dir); path != "" {
		tmpl, _ := readbuf.ReadFile(nil, path)
		fmt.Fprintf(h, "\x00%d:", len(tmpl))
		h.Write(tmpl)
	}
	return h.Sum(nil)
}
