package store

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

// queryFiles holds queries.sql and one queries_<topic>.sql per engine area
// (workflows, waits, …), each with its constants in queries_<topic>.go.
//
//go:embed queries*.sql
var queryFiles embed.FS

//go:embed schema/queuety.sql
var schemaSQL string

//go:embed schema/queuety_go.sql
var ownSchemaSQL string

//go:embed schema/extensions.sql
var extensionsSQL string

// Query names, one per "-- name:" block of queries.sql.
const (
	qFindUniqueJob      = "find-unique-job"
	qInsertJob          = "insert-job"
	qClaimJobs          = "claim-jobs"
	qAnyDue             = "any-due"
	qAutoincSettings    = "autoinc-settings"
	qClaimWhichPlain    = "claim-which-plain"
	qSessionCandidates  = "claim-session-candidates"
	qLockSessionJobs    = "lock-session-jobs"
	qClaimWhichHandlers = "claim-which-plain-handlers"
	qClaimWhichSteps    = "claim-which-steps"
	qClaimWhichAllSteps = "claim-which-all-steps"
	qClaimRunning       = "claim-running"
	qClaimBury          = "claim-bury"
	qProcessingByGroup  = "processing-by-group"
	qClaimSkipGroups    = "claim-which-skip-groups"
	qGetGroupLock       = "get-group-lock"
	qReleaseGroupLock   = "release-group-lock"
	qGroupLockHolder    = "group-lock-holder"
	qInsertLogsNarrow   = "insert-logs-narrow"
	qInsertLogs         = "insert-logs"
	qLockAttempts       = "lock-attempts"
	qCompleteJobs       = "complete-jobs"
	qCompleteHeldJobs   = "complete-held-jobs"
	qPendingHandlers    = "pending-handlers"
	qRetryJob           = "retry-job"
	qBuryJob            = "bury-job"
	qUnclaimJobs        = "unclaim-jobs"
	qDeleteStartedLog   = "delete-started-log"
	qHeartbeat          = "heartbeat"
	qHeartbeatProgress  = "heartbeat-progress"
	qTouchJobs          = "touch-jobs"
	qAttemptHeld        = "attempt-held"
	qOwnedJobs          = "owned-jobs"
	qFindStale          = "find-stale"
	qPauseQueue         = "pause-queue"
	qResumeQueue        = "resume-queue"
	qPausedQueues       = "paused-queues"
	qStats              = "stats"
	qListJobs           = "list-jobs"
	qGetJob             = "get-job"
	qJobLogs            = "job-logs"
	qRetryJobByHand     = "retry-job-by-hand"
	qBuriedIDs          = "buried-ids"
	qRetryBuried        = "retry-buried"
	qBuryJobByHand      = "bury-job-by-hand"
	qDeleteJob          = "delete-job"
	qPurgeCompleted     = "purge-completed"
	qCountBuried        = "count-buried"
	qCountPurgeable     = "count-purgeable"
	qServerVersion      = "server-version"
	qServerUTCOffset    = "server-utc-offset"
	qServerProcess      = "server-process"
	qColumnExists       = "column-exists"
	qIndexExists        = "index-exists"
	qInsertJobsBulk     = "insert-jobs-bulk"
	qTruncateJobs       = "truncate-jobs"
	qTruncateLogs       = "truncate-logs"
	qCountLogEvents     = "count-log-events"

	qFindDispatchKey        = "find-dispatch-key"
	qInsertDispatchKey      = "insert-dispatch-key"
	qInsertWorkflow         = "insert-workflow"
	qGetWorkflow            = "get-workflow"
	qLockWorkflow           = "lock-workflow"
	qLockJob                = "lock-job"
	qLockWorkflows          = "lock-workflows"
	qLockJobs               = "lock-jobs"
	qAdvanceWorkflows       = "advance-workflows"
	qCompleteWorkflowJobs   = "complete-workflow-jobs"
	qUpdateWorkflowState    = "update-workflow-state"
	qAdvanceWorkflow        = "advance-workflow"
	qCompleteWorkflow       = "complete-workflow"
	qFailWorkflow           = "fail-workflow"
	qCompleteWorkflowJob    = "complete-workflow-job"
	qCompleteWorkflowJobAny = "complete-workflow-job-any"
	qCountCompletedStepJobs = "count-completed-step-jobs"
	qBuryStepJobs           = "bury-step-jobs"
	qBuryWorkflowJobs       = "bury-workflow-jobs"
	qClaimJobByID           = "claim-job-by-id"
	qInsertWorkflowEvent    = "insert-workflow-event"
	qRetryWorkflowJob       = "retry-workflow-job"
)

// block is one commented SQL statement of an embedded file.
type block struct {
	kind, name, sql string
}

// parseBlocks splits an embedded SQL file on "-- <kind>: <name>" header
// lines. Comment lines inside a block are dropped; the SQL is kept as written.
func parseBlocks(src string, kinds ...string) ([]block, error) {
	var out []block
	var cur *block
	var body strings.Builder
	flush := func() {
		if cur != nil {
			cur.sql = strings.TrimSuffix(strings.TrimSpace(body.String()), ";")
			out = append(out, *cur)
		}
		body.Reset()
	}
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") {
			header := strings.TrimSpace(strings.TrimPrefix(trimmed, "--"))
			for _, k := range kinds {
				if name, ok := strings.CutPrefix(header, k+":"); ok {
					flush()
					cur = &block{kind: k, name: strings.TrimSpace(name)}
				}
			}
			continue
		}
		if cur != nil {
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	flush()
	for _, b := range out {
		if b.name == "" || b.sql == "" {
			return nil, fmt.Errorf("embedded SQL: empty %s block %q", b.kind, b.name)
		}
	}
	return out, nil
}

// render replaces {suffix} placeholders with backquoted table names.
func render(sql string, t Tables) string {
	for _, s := range allSuffixes() {
		sql = strings.ReplaceAll(sql, "{"+s+"}", "`"+t[s]+"`")
	}
	return sql
}

// loadQueries parses queries.sql and renders it for the given tables.
func loadQueries(t Tables) (map[string]string, error) {
	files, err := fs.Glob(queryFiles, "queries*.sql")
	if err != nil {
		return nil, err
	}
	q := map[string]string{}
	for _, name := range files {
		src, err := queryFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		blocks, err := parseBlocks(string(src), "name")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, b := range blocks {
			if _, dup := q[b.name]; dup {
				return nil, fmt.Errorf("%s: query %q defined twice", name, b.name)
			}
			q[b.name] = render(b.sql, t)
		}
	}
	// The stuck-reason expression is written once and spliced into the
	// queries that classify jobs (queries_stuck.sql).
	for name, sql := range q {
		q[name] = strings.ReplaceAll(sql, "/*reason*/", q[qStuckReason])
	}
	return q, nil
}
