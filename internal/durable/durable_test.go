package durable

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestQueueRunsInOrder(t *testing.T) {
	var q Queue
	var mu sync.Mutex
	var ran []int
	release := make(chan struct{})
	for i := range 20 {
		q.Do(func() error {
			if i == 0 {
				// The first sync is slow: nothing queued after it may
				// overtake it.
				<-release
			}
			mu.Lock()
			ran = append(ran, i)
			mu.Unlock()
			return nil
		})
	}
	close(release)
	if err := q.Wait(); err != nil {
		t.Fatal(err)
	}
	want := make([]int, 20)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
}

func TestQueueWaitWaits(t *testing.T) {
	var q Queue
	if err := q.Err(); err != nil {
		t.Fatalf("Err of an empty queue = %v", err)
	}
	done := false
	q.Do(func() error {
		time.Sleep(20 * time.Millisecond)
		done = true
		return nil
	})
	if err := q.Wait(); err != nil || !done {
		t.Fatalf("Wait returned %v before the sync was done (done %v)", err, done)
	}
	// A queue with nothing left waits for nothing.
	if err := q.Wait(); err != nil {
		t.Fatal(err)
	}
	var empty Queue
	if err := empty.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestQueueKeepsFirstError(t *testing.T) {
	var q Queue
	first, second := errors.New("first"), errors.New("second")
	if err := q.Do(func() error { return first }); err != nil {
		t.Fatalf("Do returned %v; a queued sync's error is Wait's", err)
	}
	q.Do(func() error { return second })
	ran := false
	q.Do(func() error { ran = true; return nil })
	if err := q.Wait(); err != first {
		t.Errorf("Wait = %v, want %v", err, first)
	}
	if err := q.Err(); err != first {
		t.Errorf("Err = %v, want %v", err, first)
	}
	if !ran {
		t.Error("a failed sync stopped the ones after it")
	}
	if err := q.Wait(); err != first {
		t.Errorf("second Wait = %v, want %v still", err, first)
	}
}

func TestNilQueueRunsAtOnce(t *testing.T) {
	var q *Queue
	boom := errors.New("boom")
	ran := false
	if err := q.Do(func() error { ran = true; return boom }); err != boom || !ran {
		t.Errorf("Do on nil = %v (ran %v), want %v at once", err, ran, boom)
	}
	if err := q.Wait(); err != nil {
		t.Errorf("Wait on nil = %v", err)
	}
	if err := q.Err(); err != nil {
		t.Errorf("Err on nil = %v", err)
	}
}
