// Package clock lets services read the time through an interface, so tests
// can move it by hand instead of sleeping.
package clock

import (
	"sync"
	"time"
)

// Clock is the application clock. Queuety writes some times from the
// application clock (PHP gmdate) and others from the database (NOW()); every
// value we compute in Go goes through a Clock so tests can stub it, and
// every background loop ticks on one, so tests can drive it.
type Clock interface {
	Now() time.Time
	// NewTicker ticks every d of this clock's time, dropping ticks a slow
	// reader misses, as time.Ticker does.
	NewTicker(d time.Duration) Ticker
}

// Ticker is a time.Ticker on a Clock.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the wall clock, in UTC.
type Real struct{}

// Now returns the current time in UTC.
func (Real) Now() time.Time { return time.Now().UTC() }

// NewTicker is time.NewTicker.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// Fake is a manually driven clock for tests. Its tickers fire when Advance
// or Set moves the time past their next tick.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*fakeTicker
}

// NewFake returns a Fake clock set to t.
func NewFake(t time.Time) *Fake {
	return &Fake{now: t.UTC()}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the fake time forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.fire()
}

// Set moves the fake time to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t.UTC()
	f.fire()
}

// NewTicker returns a ticker whose first tick is d after the fake now.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTicker{f: f, d: d, next: f.now.Add(d), c: make(chan time.Time, 1)}
	f.tickers = append(f.tickers, t)
	return t
}

// fire sends a tick on every ticker that is due (f.mu held).
func (f *Fake) fire() {
	for _, t := range f.tickers {
		if t.next.After(f.now) {
			continue
		}
		select {
		case t.c <- f.now:
		default: // the reader is behind: the tick is dropped
		}
		for !t.next.After(f.now) {
			t.next = t.next.Add(t.d)
		}
	}
}

type fakeTicker struct {
	f    *Fake
	d    time.Duration
	next time.Time
	c    chan time.Time
}

func (t *fakeTicker) C() <-chan time.Time { return t.c }

func (t *fakeTicker) Stop() {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	for i, o := range t.f.tickers {
		if o == t {
			t.f.tickers = append(t.f.tickers[:i], t.f.tickers[i+1:]...)
			return
		}
	}
}
