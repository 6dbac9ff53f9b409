package clock

import (
	"testing"
	"time"
)

func TestFakeTicker(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := NewFake(t0)
	tk := f.NewTicker(time.Minute)
	f.Advance(59 * time.Second)
	select {
	case <-tk.C():
		t.Fatal("tick before the interval")
	default:
	}
	f.Advance(10 * time.Minute) // one tick kept, the rest dropped
	if got := <-tk.C(); !got.Equal(t0.Add(10*time.Minute + 59*time.Second)) {
		t.Fatalf("tick at %s", got)
	}
	f.Advance(time.Second) // the next tick is at 11 min, not one minute after the late read
	if got := <-tk.C(); !got.Equal(t0.Add(11 * time.Minute)) {
		t.Fatalf("tick at %s", got)
	}
	tk.Stop()
	f.Advance(time.Hour)
	select {
	case <-tk.C():
		t.Fatal("tick after Stop")
	default:
	}
}
