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
	// A change made before the watch began is not missed.
	if !bytes.Equal(o.fingerprint(), before) {
		return nil
	}
	var settle <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return stopf(InterruptedStop, "interrupted while watching for changes")
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if name := filepath.Base(ev.Name); name == PRDFile || name == HarnessFile {
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
