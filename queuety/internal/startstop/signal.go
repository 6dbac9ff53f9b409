package startstop

import "time"

// Signal is a value a loop reports for tests (River's test signals): a
// test calls Init before Start and then Wait for each value, instead of
// sleeping until the loop has probably done its work. A Signal never
// initialised, as in production, costs a nil check.
type Signal[T any] struct {
	ch chan T
}

// Init makes the signal record its values (up to a buffer; a test that
// reads none never blocks the loop).
func (s *Signal[T]) Init() { s.ch = make(chan T, 64) }

// Signal records v when the signal is initialised.
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
	}
}

// Wait returns the next value, or false after timeout.
func (s *Signal[T]) Wait(timeout time.Duration) (T, bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case v := <-s.ch:
		return v, true
	case <-t.C:
		var zero T
		return zero, false
	}
}

// Drain drops the values recorded so far, so the next Wait gets a newer one.
func (s *Signal[T]) Drain() {
	for {
		select {
		case <-s.ch:
		default:
			return
		}
	}
}
