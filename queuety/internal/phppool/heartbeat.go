package phppool

import (
	"context"
	"errors"
	"log/slog"

	"github.com/queuety-go/queuety/queuety"
)

// heartbeatRelay passes a job's PHP heartbeats to Job.Heartbeat (a
// workflow step's to queuety.StepHeartbeat) off the
// slot goroutine, so a slow database never stalls reading frames. Beats
// that arrive while one is being written collapse into the latest: only
// the last progress is stored anyway (heartbeat_data). The last beat
// before the result is always written, as PHP's synchronous beat() would.
type heartbeatRelay struct {
	ch       chan progressMsg
	done     chan struct{}
	finished chan struct{}
	lost     chan struct{} // closed when Heartbeat says the job is lost
}

type progressMsg struct{ v any }

// beatFunc stores one heartbeat: Job.Heartbeat or queuety.StepHeartbeat.
type beatFunc func(ctx context.Context, progress any) error

func startRelay(ctx context.Context, beat beatFunc, jobID int64, log *slog.Logger) *heartbeatRelay {
	h := &heartbeatRelay{
		ch: make(chan progressMsg, 1), done: make(chan struct{}),
		finished: make(chan struct{}), lost: make(chan struct{}),
	}
	go h.loop(ctx, beat, jobID, log)
	return h
}

// push hands over the latest progress, replacing one not yet written.
// Only the slot goroutine pushes.
func (h *heartbeatRelay) push(v any) {
	m := progressMsg{v}
	select {
	case h.ch <- m:
		return
	default:
	}
	select {
	case <-h.ch:
	default:
	}
	select {
	case h.ch <- m:
	default:
	}
}

// stop writes a pending beat and waits for the relay to finish.
func (h *heartbeatRelay) stop() {
	close(h.done)
	<-h.finished
}

func (h *heartbeatRelay) loop(ctx context.Context, store beatFunc, jobID int64, log *slog.Logger) {
	defer close(h.finished)
	beat := func(m progressMsg) bool {
		err := store(ctx, m.v)
		if errors.Is(err, queuety.ErrJobLost) {
			close(h.lost)
			return false
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("relaying a PHP heartbeat failed", "job", jobID, "err", err)
		}
		return true
	}
	for {
		select {
		case m := <-h.ch:
			if !beat(m) {
				return
			}
		case <-h.done:
			select {
			case m := <-h.ch:
				if ctx.Err() == nil {
					beat(m)
				}
			default:
			}
			return
		}
	}
}
