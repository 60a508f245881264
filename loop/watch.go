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
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", o.Dir, err)
	}
	defer w.Close()
	before := o.fingerprint()
	if err := w.Add(o.Dir); err != nil {
		return fmt.Errorf("watch %s: %w", o.Dir, err)
	}
	o.emit(Event{Event: EventWaiting, Reason: "watch", Note: why,
		Message: fmt.Sprintf("%s; watching %s and %s for changes", why, PRDFile, HarnessFile)})
	// A change made before the watch began is not missed, but it may be a
	// save still under way: it settles first, as one seen would.
	var settle <-chan time.Time
	if !bytes.Equal(o.fingerprint(), before) {
		settle = time.After(debounce)
	}
	for {
		select {
		case <-ctx.Done():
			return stopf(InterruptedStop, "interrupted while watching for changes")
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if watched(ev) {
				settle = time.After(debounce)
			}
		case err, ok := <-w.Errors:
			if ok {
				return fmt.Errorf("watch %s: %w", o.Dir, err)
			}
		case <-settle:
			if !bytes.Equal(o.fingerprint(), before) {
				return nil
			}
			settle = nil
		}
	}
}

// waitQuiet blocks until neither prd.json nor harness.toml has changed for
// grace (or for maxSettle, however often they change), or ctx ends. The
// loop calls it, watching, before it says that one of them cannot be
// used: read again then, a file an editor was saving is whole.
func (o *Options) waitQuiet(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", o.Dir, err)
	}
	defer w.Close()
	if err := w.Add(o.Dir); err != nil {
		return fmt.Errorf("watch %s: %w", o.Dir, err)
	}
	quiet, limit := time.After(grace), time.After(maxSettle)
	for {
		select {
		case <-ctx.Done():
			return stopf(InterruptedStop, "interrupted while watching for changes")
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if watched(ev) {
				quiet = time.After(grace)
			}
		case err, ok := <-w.Errors:
			if ok {
				return fmt.Errorf("watch %s: %w", o.Dir, err)
			}
		case <-quiet:
			return nil
		case <-limit:
			return nil
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
	if name := o.Config.PromptTemplateName; name != "" {
		tmpl, _ := readbuf.ReadFile(nil, o.path(name))
		fmt.Fprintf(h, "\x00%d:", len(tmpl))
		h.Write(tmpl)
	}
	return h.Sum(nil)
}
