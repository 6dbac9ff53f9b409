package queuety

import (
	store "github.com/queuety-go/queuety/sql"
)

// maxCompletionBatch bounds one write of completions (statement size).
const maxCompletionBatch = 1024

// completeLoop writes successful completions in batches: whatever has
// arrived while the previous batch was being written goes in the next. At
// Stop it writes everything left.
func (w *Worker) completeLoop() {
	defer close(w.completerDone)
	batch := make([]store.Completion, 0, maxCompletionBatch)
	for {
		select {
		case c := <-w.completions:
			batch = append(batch, c)
		case <-w.completerStop:
			for {
				select {
				case c := <-w.completions:
					batch = append(batch, c)
					continue
				default:
				}
				break
			}
			w.flush(batch)
			return
		}
	drain:
		for len(batch) < cap(batch) {
			select {
			case c := <-w.completions:
				batch = append(batch, c)
			default:
				break drain
			}
		}
		w.flush(batch)
		batch = batch[:0]
		w.sampleMemory()
	}
}

func (w *Worker) flush(batch []store.Completion) {
	if len(batch) == 0 {
		return
	}
	defer w.settled(batch)
	w.writeCompletions(batch)
}

// settled ends the heartbeats of finished attempts whose completions were
// written (or given up on: then the stale sweep has them).
func (w *Worker) settled(batch []store.Completion) {
	w.noteFinished() // before they leave settling: see Drained
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range batch {
		delete(w.settling, c.ID)
	}
}
