package queuety

import (
	"sync"

	store "github.com/queuety-go/queuety/sql"
)

// batchTurns keeps one batch's callbacks in the order of the commits that
// fired them. A burial that fires catch and the next that finishes the
// batch (finally) commit one after the other, but their callbacks run
// after the commit on each job's own goroutine, so a slow catch used to be
// overtaken by the finally. The plugin, one job at a time per process,
// always runs catch then finally. Here the writes of one batch's counters
// are taken one at a time (the batch row's lock serializes them in the
// database anyway), and each write that fires a callback takes a turn
// that waits for the previous turn's callbacks. Only this process's
// writes are ordered: a PHP worker beside it fires its own, as two
// plugin workers do.
type batchTurns struct {
	mu    sync.Mutex
	lines map[int64]*batchLine
}

// batchLine is one batch's writes and turns in this process.
type batchLine struct {
	write sync.Mutex    // held across a counters write and taking its turn
	last  chan struct{} // closed when the latest turn's callbacks have run
	users int           // writers and unfinished turns; the line goes at 0
}

// batchTurn is the right to run one write's callbacks after the turn
// before it.
type batchTurn struct {
	prev <-chan struct{}
	done chan struct{}
	end  func()
}

// write runs fn, the write of batch id's counters, alone among this
// process's writes of that batch, and returns a turn when the write fired
// callbacks; the caller runs them through the turn and ends it.
func (t *batchTurns) write(id int64, fn func() (store.BatchCallbacks, error)) (store.BatchCallbacks, *batchTurn, error) {
	t.mu.Lock()
	if t.lines == nil {
		t.lines = map[int64]*batchLine{}
	}
	l := t.lines[id]
	if l == nil {
		l = &batchLine{}
		t.lines[id] = l
	}
	l.users++
	t.mu.Unlock()

	l.write.Lock()
	cb, err := fn()
	var turn *batchTurn
	if err == nil && cb.Any() {
		turn = &batchTurn{prev: l.last, done: make(chan struct{})}
		l.last = turn.done
	}
	l.write.Unlock()

	leave := func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if l.users--; l.users == 0 {
			delete(t.lines, id)
		}
	}
	if turn == nil {
		leave()
		return cb, nil, err
	}
	var once sync.Once
	turn.end = func() {
		once.Do(func() {
			close(turn.done)
			leave()
		})
	}
	return cb, turn, err
}

// wait blocks until the callbacks of the turn before this one have run.
func (t *batchTurn) wait() {
	if t != nil && t.prev != nil {
		<-t.prev
	}
}

// finish ends the turn (its callbacks ran, or none will); safe on nil and
// twice.
func (t *batchTurn) finish() {
	if t != nil {
		t.end()
	}
}
