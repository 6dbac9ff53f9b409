package queuety

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

// outcomes records what a worker tells its Observer, as queue/handler/outcome.
type outcomes struct {
	mu   sync.Mutex
	seen []string
}

func (o *outcomes) ObserveClaim(time.Duration, int) {}

func (o *outcomes) ObserveJob(queue, handler string, outcome Outcome, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, queue+"/"+handler+"/"+string(outcome))
}

func (o *outcomes) has(s string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.seen, s)
}

// A job the claim buries itself (its worker_session cannot be read) is
// told to the Observer, so the metrics count it like any burial.
func TestObserverCountsClaimBurials(t *testing.T) {
	t.Parallel()
	rec := &outcomes{}
	c := newTestClient(t, func(cfg *Config) { cfg.Observer = rec })
	bad := insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	execSQL(t, c, "UPDATE {jobs} SET worker_session = 'not json' WHERE id = ?", bad)
	reg := NewRegistry()
	reg.HandleFunc("render", func(context.Context, *Job) error { return nil })
	w := sessionWorker(t, c, reg, "gpu-1", "gpu:nvidia-l4")
	waitFor(t, 10*time.Second, "bad job buried", func() bool { return jobRow(t, c, bad).Status == store.StatusBuried })
	waitFor(t, 5*time.Second, "the burial observed", func() bool { return rec.has("gpu-activities/render/buried") })
	require.EqualValues(t, 1, w.Stats().Buried)
}

// A completion the server refuses buries the job (refusedWrite): the
// Observer is told of the burial, not only of the completed attempt.
func TestObserverCountsRefusedCompletionBurial(t *testing.T) {
	t.Parallel()
	rec := &outcomes{}
	c := newTestClient(t, func(cfg *Config) { cfg.Observer = rec })
	execSQL(t, c, "CREATE TRIGGER refuse_poison_done BEFORE INSERT ON {logs} FOR EACH ROW "+
		"IF NEW.event = 'completed' AND NEW.handler = 'poison' THEN SIGNAL SQLSTATE '22001' SET MESSAGE_TEXT = 'completion refused by test'; END IF")
	reg := NewRegistry()
	reg.HandleFunc("poison", func(context.Context, *Job) error { return nil })
	d, err := c.Dispatch(context.Background(), "poison", nil)
	require.NoError(t, err)
	w := startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "buried", func() bool { return jobRow(t, c, d.ID).Status == store.StatusBuried })
	require.Contains(t, jobRow(t, c, d.ID).ErrorMessage.String, "could not record its completion")
	waitFor(t, 5*time.Second, "the burial observed", func() bool { return rec.has("default/poison/buried") })
	require.EqualValues(t, 1, w.Stats().Buried)
}
