package queuety

import (
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// memorySampler keeps the memory_peak_kb figure written on completed rows:
// live heap divided by the slots, sampled at most once a second. PHP's
// resource admission reads MAX(memory_peak_kb) per handler, so this must be
// a per-job share, never the whole process (spec §7.7).
type memorySampler struct {
	slots int
	kb    atomic.Int64
	at    time.Time // the last sample; only sample writes it
}

// sample refreshes the figure when the last sample is a second old. The
// completer calls it after each batch, Start once.
func (m *memorySampler) sample() {
	if time.Since(m.at) < time.Second {
		return
	}
	m.at = time.Now()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	m.kb.Store(max(1, int64(s[0].Value.Uint64()/1024)/int64(m.slots)))
}

// perSlotKB is the last sample, 0 before the first.
func (m *memorySampler) perSlotKB() int64 { return m.kb.Load() }
