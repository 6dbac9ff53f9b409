package queuety

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// running is one attempt in flight.
type running struct {
	job       *Job
	row       store.JobRow
	cancel    context.CancelCauseFunc
	state     atomic.Int32
	lastTouch atomic.Int64 // unix nanos of the last reserved_at refresh
	start     time.Time
	lane      *lane
	// sessionLease is the lease of the job's worker session (0: none).
	sessionLease time.Duration
	// memPeakKB is the peak memory the process that ran the job reported
	// (Job.ReportMemoryPeak; the PHP pool's), 0 when none did.
	memPeakKB atomic.Int64
	// batchTurn orders the callbacks of its batch write (batch_order.go).
	batchTurn *batchTurn
}

// running states: the runner moves an attempt from running to done, or
// Stop to abandoned, once.
const (
	stateRunning int32 = iota
	stateDone
	stateAbandoned
)

func (r *running) touched(t time.Time) { r.lastTouch.Store(t.UnixNano()) }

// runningSet is the registry of a worker's attempts in flight: those
// running in a slot, and those settling (finished, their completion not
// written yet). The claim side adds to it, the runner and the completer
// take out of it, and the heartbeater, the session agent, Stop and Drained
// read it; none of them shares another's lock.
//
// Settling attempts are out of their slot but still heartbeated, so no
// stale sweep takes a job that ran only because its completion waits out a
// lost connection.
type runningSet struct {
	mu       sync.Mutex
	running  map[int64]*running
	settling map[int64]*running
}

func newRunningSet() *runningSet {
	return &runningSet{running: map[int64]*running{}, settling: map[int64]*running{}}
}

// add registers attempts that start running.
func (s *runningSet) add(rjs ...*running) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rj := range rjs {
		s.running[rj.row.ID] = rj
	}
}

// remove takes job id off the running attempts: it finished, or its final
// write committed and only what follows the write still runs.
func (s *runningSet) remove(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, id)
}

// chain hands the slot of job id to next, a step job the worker holds from
// the commit that enqueued it; with keep false (the worker began stopping)
// next is not registered and the slot ends with id.
func (s *runningSet) chain(id int64, next *running, keep bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, id)
	if keep {
		s.running[next.row.ID] = next
	}
}

// settle registers rj as settling: finished, its completion on its way to
// the completer.
func (s *runningSet) settle(rj *running) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settling[rj.row.ID] = rj
}

// settled takes the completions of batch off the settling attempts: they
// were written, or given up on (then the stale sweep has them).
func (s *runningSet) settled(batch []store.Completion) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range batch {
		delete(s.settling, c.ID)
	}
}

// isRunning reports whether job id is running (not settling).
func (s *runningSet) isRunning(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.running[id]
	return ok
}

// count is how many attempts run in a slot.
func (s *runningSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}

// busy is how many attempts run or settle.
func (s *runningSet) busy() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running) + len(s.settling)
}

// touchedBefore returns the running and settling attempts whose
// reserved_at was last refreshed at or before due (unix nanos).
func (s *runningSet) touchedBefore(due int64) map[int64]*running {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int64]*running{}
	for _, set := range []map[int64]*running{s.running, s.settling} {
		for id, rj := range set {
			if rj.lastTouch.Load() <= due {
				out[id] = rj
			}
		}
	}
	return out
}

// bySession groups the running attempts of session-bound jobs by session.
func (s *runningSet) bySession() map[string][]*running {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]*running{}
	for _, rj := range s.running {
		if sid := rj.row.SessionID; sid.Valid {
			out[sid.String] = append(out[sid.String], rj)
		}
	}
	return out
}

// abandon marks every attempt still running as abandoned and returns them
// to be handed back: their handlers ignored cancellation, and whatever they
// return later is dropped.
func (s *runningSet) abandon() []store.Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	var give []store.Attempt
	for _, rj := range s.running {
		if rj.state.CompareAndSwap(stateRunning, stateAbandoned) {
			give = append(give, rj.job.attempt)
		}
	}
	return give
}

// finishing is how many running attempts are not abandoned: their handlers
// returned and they are still writing their outcome.
func (s *runningSet) finishing() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, rj := range s.running {
		if rj.state.Load() != stateAbandoned {
			n++
		}
	}
	return n
}

// settlingCount is how many finished attempts wait for their completion
// to be written.
func (s *runningSet) settlingCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.settling)
}
