package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// RetentionKind names one kind of row retention deletes.
type RetentionKind string

// The kinds, in the order a sweep deletes them: workflows first (with their
// events and jobs), then the rows that are left.
const (
	RetainWorkflows RetentionKind = "workflows" // finished workflows, with their events, jobs, signals
	RetainCompleted RetentionKind = "completed" // completed jobs
	RetainBuried    RetentionKind = "buried"    // buried jobs
	RetainEvents    RetentionKind = "events"    // workflow events of finished workflows
	RetainLogs      RetentionKind = "logs"      // log rows of finished jobs and workflows
)

// RetentionKinds lists every kind in sweep order.
var RetentionKinds = []RetentionKind{RetainWorkflows, RetainCompleted, RetainBuried, RetainEvents, RetainLogs}

// ParseRetentionKind checks a kind's name.
func ParseRetentionKind(s string) (RetentionKind, error) {
	for _, k := range RetentionKinds {
		if string(k) == strings.ToLower(strings.TrimSpace(s)) {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown kind %q (want completed, logs, events, workflows or buried)", s)
}

// retentionQueries is a kind's count, its slice select and its delete
// (workflows: no delete, purgeWorkflows deletes by id).
func (s *Store) retentionQueries(k RetentionKind) (count, sel, del string, err error) {
	return s.retentionQueriesIn(k, "")
}

// retentionQueriesIn is retentionQueries with each table named with
// database (Store.queryIn).
func (s *Store) retentionQueriesIn(k RetentionKind, database string) (count, sel, del string, err error) {
	var where, c, q, d string
	switch k {
	case RetainCompleted:
		where, c, q, d = qRetentionCompletedWhere, qRetentionCountJobs, qRetentionSelectJobs, qRetentionDeleteCompleted
	case RetainBuried:
		where, c, q, d = qRetentionBuriedWhere, qRetentionCountJobs, qRetentionSelectJobs, qRetentionDeleteBuried
	case RetainLogs:
		where, c, q, d = qRetentionLogsWhere, qRetentionCountLogs, qRetentionSelectLogs, qRetentionDeleteLogs
	case RetainEvents:
		where, c, q, d = qRetentionEventsWhere, qRetentionCountEvents, qRetentionSelectEvents, qRetentionDeleteEvents
	case RetainWorkflows:
		where, c, q = qRetentionWorkflowsWhere, qRetentionCountWorkflows, qRetentionSelectWorkflows
	default:
		return "", "", "", fmt.Errorf("unknown retention kind %q", k)
	}
	w, err := s.queryIn(where, database)
	if err != nil {
		return "", "", "", err
	}
	splice := func(name string) string {
		if name == "" || err != nil {
			return ""
		}
		var q string
		q, err = s.queryIn(name, database)
		return strings.Replace(q, "/*where*/", w, 1)
	}
	count, sel, del = splice(c), splice(q), splice(d)
	return count, sel, del, err
}

// CountRetention counts the rows of kind PurgeRetention(kind, cutoff) would
// delete now.
func (s *Store) CountRetention(ctx context.Context, k RetentionKind, cutoff time.Time) (int, error) {
	q, _, _, err := s.retentionQueries(k)
	if err != nil {
		return 0, err
	}
	var n int
	if err := s.db.GetContext(ctx, &n, q, DateTime(cutoff)); err != nil {
		return 0, fmt.Errorf("count %s: %w", k, err)
	}
	return n, nil
}

// PurgeRetentionBatch deletes at most limit rows of kind older than cutoff
// in one short statement (workflows: one short transaction for at most limit
// workflows and their rows) and returns how many rows of the kind it
// deleted, and whether it read a full slice (there may be more).
func (s *Store) PurgeRetentionBatch(ctx context.Context, k RetentionKind, cutoff time.Time, limit int) (n int, more bool, err error) {
	_, sel, del, err := s.retentionQueries(k)
	if err != nil {
		return 0, false, err
	}
	if k == RetainWorkflows {
		n, err := s.purgeWorkflows(ctx, sel, cutoff, limit)
		return n, n == limit, err
	}
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, sel, DateTime(cutoff), limit); err != nil {
		return 0, false, fmt.Errorf("purge %s: %w", k, err)
	}
	if len(ids) == 0 {
		return 0, false, nil
	}
	q, args, err := sqlx.In(del, ids, DateTime(cutoff))
	if err != nil {
		return 0, false, err
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(q), args...)
	if err != nil {
		return 0, false, fmt.Errorf("purge %s: %w", k, err)
	}
	// A row of the slice that changed between the read and the delete (a
	// job retried by hand) is left; the next slice starts after it only if
	// it was deleted, so a slice the delete refused whole ends the purge.
	deleted, _ := res.RowsAffected()
	return int(deleted), len(ids) == limit && deleted > 0, nil
}

func (s *Store) purgeWorkflows(ctx context.Context, sel string, cutoff time.Time, limit int) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var ids []int64
		if err := tx.SelectContext(ctx, &ids, sel, DateTime(cutoff), limit); err != nil {
			return err
		}
		n = len(ids)
		if n == 0 {
			return nil
		}
		for _, name := range []string{qRetentionWorkflowEvents, qRetentionWorkflowJobs, qRetentionWorkflowSignals,
			qRetentionWorkflowDeps, qRetentionWorkflowDispatch, qRetentionWorkflowRows} {
			q, args, err := s.in(name, ids)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("purge workflows: %w", err)
	}
	return n, nil
}

// RetentionLock takes the server-wide named lock that lets one daemon per
// database sweep at a time, without waiting. ok is false when another
// session holds it. release gives it back and closes the connection that
// holds it (closing alone would release it too).
//
// On a cluster (CoordinationRows) it is a lease of the locks table instead
// (see Lease), held for at most an hour: a sweep that outlives it may
// overlap the next one, which costs only work, each delete checking its
// condition again.
func (s *Store) RetentionLock(ctx context.Context) (release func(), ok bool, err error) {
	if s.coord == CoordinationRows {
		return s.Lease(ctx, "retention", leaseOwner(), time.Hour)
	}
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return nil, false, err
	}
	var got sql.NullInt64
	if err := conn.GetContext(ctx, &got, s.query(qRetentionLock), s.tables["jobs"]); err != nil {
		_ = conn.Close()
		return nil, false, fmt.Errorf("retention lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		_ = conn.Close()
		return nil, false, nil
	}
	return func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(c, s.query(qRetentionUnlock), s.tables["jobs"]); err != nil {
			_ = conn.Raw(func(any) error { return driverBadConn })
		}
		_ = conn.Close()
	}, true, nil
}
