// Package durable runs the syncs that make ralph's records durable in the
// background, one after another in the order they were asked for.
//
// A write reaches the page cache at once and survives ralph being killed;
// only a crash of the machine needs the sync, and a sync costs a few
// tenths of a millisecond on a good disk, several on a slow one. The loop
// writes each record when it happens and queues its sync here, so that the
// agent runs while the disk catches up; before a write whose durability
// depends on the earlier ones (a verdict needs its iteration's started
// marker on disk), and before ralph exits, it waits for the queue.
package durable

import "sync"

// Queue runs syncs in the background, in the order they were queued. The
// zero Queue is ready to use; a nil *Queue runs each sync at once.
type Queue struct {
	mu   sync.Mutex
	last chan struct{} // closed when the sync queued last is done; nil: none yet
	err  error         // the first sync that failed
}

// Do queues fn, a sync, to run after every sync queued before it, and
// returns nil; Wait and Err report its error. On a nil Queue it runs fn at
// once and returns its error.
func (q *Queue) Do(fn func() error) error {
	if q == nil {
		return fn()
	}
	q.mu.Lock()
	prev := q.last
	done := make(chan struct{})
	q.last = done
	q.mu.Unlock()
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		if err := fn(); err != nil {
			q.mu.Lock()
			if q.err == nil {
				q.err = err
			}
			q.mu.Unlock()
		}
	}()
	return nil
}

// Err returns the first error of any sync the queue has run so far, without
// waiting for the others.
func (q *Queue) Err() error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// Wait waits until every sync queued so far is done and returns the first
// error of any sync the queue ran: once a sync has failed, what was written
// before it may not be on disk, and every later Wait says so.
func (q *Queue) Wait() error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	last := q.last
	q.mu.Unlock()
	if last != nil {
		<-last
	}
	return q.Err()
}
