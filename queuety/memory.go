package queuety

import (
	"runtime/metrics"
	"time"
)

// sampleMemory refreshes the memory_peak_kb figure written on completed
// rows: live heap divided by the slots, at most once a second. PHP's
// resource admission reads MAX(memory_peak_kb) per handler, so this must be
// a per-job share, never the whole process (spec §7.7).
func (w *Worker) sampleMemory() {
	if time.Since(w.memAt) < time.Second {
		return
	}
	w.memAt = time.Now()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	w.memKB.Store(max(1, int64(s[0].Value.Uint64()/1024)/int64(w.cfg.Concurrency)))
}
