package sessions

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

// admitConcurrently runs one admission per worker at once, each in its own
// store transaction (retried on deadlocks like the claim's), and returns
// the results by worker.
func (e *env) admitConcurrently(admissions []Admission) []Result {
	e.t.Helper()
	results := make([]Result, len(admissions))
	errs := make([]error, len(admissions))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, a := range admissions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = e.st.SessionTx(e.ctx, func(tx store.Sessions) error {
				var err error
				results[i], err = e.reg.Admit(e.ctx, tx, a)
				return err
			})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(e.t, err, "admission %d leaked an error", i)
		e.checkResult(results[i])
	}
	return results
}

// N workers admit the same new session at once: exactly one owns it, one
// row exists, every other admission is refused as owned by another worker,
// and no deadlock reaches a caller.
func TestConcurrentAdmissionOfANewSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 12
	for round := range 3 {
		var as []Admission
		session := fmt.Sprintf("shared-%d", round)
		for i := range n {
			w := fmt.Sprintf("w%d", i)
			if round == 0 {
				e.register(w, "gpu:nvidia-l4")
			}
			as = append(as, Admission{WorkerID: w, Options: gpu(session), JobID: int64(100*round + i + 1)})
		}
		results := e.admitConcurrently(as)
		owners := map[string]bool{}
		created := 0
		for _, res := range results {
			if res.Admitted {
				require.Equal(t, OutcomeCreated, res.Outcome)
				owners[*res.Session.LeaseOwner] = true
				created++
				continue
			}
			require.Equal(t, ReasonOwnedByAnotherWorker, res.Reason, res.Error)
		}
		require.Equal(t, 1, created)
		require.Len(t, owners, 1)
		s := e.get(session)
		require.True(t, owners[*s.LeaseOwner])
	}
	require.Equal(t, Metrics{Total: 3, Active: 3}, e.list().Metrics, "one row per session")
}

// One worker with a limit of one session admits different new sessions
// from several transactions at once: the registration lock lets exactly
// one through.
func TestConcurrentAdmissionsRespectTheWorkerLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.registerWith(Registration{WorkerID: "w1", TaskQueue: "gpu-activities", Capabilities: []string{"gpu:nvidia-l4"}, MaxConcurrentWorkerSessions: val(1)})
	var as []Admission
	for i := range 10 {
		as = append(as, Admission{WorkerID: "w1", Options: gpu(fmt.Sprintf("s%d", i)), JobID: int64(i + 1)})
	}
	admitted := 0
	for _, res := range e.admitConcurrently(as) {
		if res.Admitted {
			admitted++
			continue
		}
		require.Equal(t, ReasonWorkerSessionLimitExceeded, res.Reason)
		require.Equal(t, 1, *res.MaxConcurrentWorkerSessions)
	}
	require.Equal(t, 1, admitted)
	require.Equal(t, Metrics{Total: 1, Active: 1}, e.list().Metrics)
}

// Concurrent creates, heartbeats and closes through the registry's own
// transactions never leak a deadlock and leave one consistent row.
func TestConcurrentLifecycleCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 4 {
		e.register(fmt.Sprintf("w%d", i), "gpu:nvidia-l4")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 4 {
		w := fmt.Sprintf("w%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				for _, call := range []func() (Result, error){
					func() (Result, error) { return e.reg.Create(e.ctx, "", w, gpu("hot")) },
					func() (Result, error) { return e.reg.HeartbeatSession(e.ctx, "", "hot", w, nil) },
					func() (Result, error) { _, err := e.reg.List(e.ctx, ""); return Result{}, err },
				} {
					if _, err := call(); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	s := e.get("hot")
	require.Equal(t, StatusActive, s.Status)
	res := e.close("hot", *s.LeaseOwner)
	requireAdmitted(t, res, OutcomeClosed, 200)
	require.Equal(t, Metrics{Total: 1, Closed: 1}, e.list().Metrics)
}

// A claim that is rolled back after its admission leaves no session row
// (WorkerSessionProtocolTest: a lost claim creates nothing).
func TestRolledBackAdmissionLeavesNoSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	// The transaction admits, then fails: SessionTx rolls it back.
	lost := errors.New("the claim is lost")
	var res Result
	err := e.st.SessionTx(e.ctx, func(tx store.Sessions) error {
		var err error
		res, err = e.reg.Admit(e.ctx, tx, Admission{WorkerID: "w1", Options: gpu("s"), JobID: 9})
		require.NoError(t, err)
		return lost
	})
	require.ErrorIs(t, err, lost)
	requireAdmitted(t, res, OutcomeCreated, 201)
	_, err = e.reg.Get(e.ctx, "", "s")
	require.ErrorIs(t, err, ErrSessionNotFound)
	require.Empty(t, e.list().Sessions)
}
