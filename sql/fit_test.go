package store

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestFitText(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in   string
		want func(t *testing.T, got string)
	}{
		"short stays": {in: "boom", want: func(t *testing.T, got string) { require.Equal(t, "boom", got) }},
		"exactly the column": {in: strings.Repeat("x", TextBytes), want: func(t *testing.T, got string) {
			require.Len(t, got, TextBytes)
		}},
		"one byte over": {in: strings.Repeat("x", TextBytes+1), want: func(t *testing.T, got string) {
			require.Len(t, got, TextBytes)
			require.True(t, strings.HasSuffix(got, "…"))
		}},
		"two-byte characters across the cut": {in: strings.Repeat("é", 40_000), want: func(t *testing.T, got string) {
			require.True(t, utf8.ValidString(got))
			require.LessOrEqual(t, len(got), TextBytes)
			require.Equal(t, strings.Repeat("é", (len(got)-len("…"))/2)+"…", got)
		}},
		"four-byte characters across the cut": {in: strings.Repeat("🙂", 20_000), want: func(t *testing.T, got string) {
			require.True(t, utf8.ValidString(got))
			require.LessOrEqual(t, len(got), TextBytes)
		}},
		"invalid bytes": {in: "bad \xff\xfe bytes", want: func(t *testing.T, got string) {
			require.Equal(t, "bad \uFFFD bytes", got)
		}},
	} {
		t.Run(name, func(t *testing.T) { tc.want(t, FitText(tc.in)) })
	}
}

func TestFitChars(t *testing.T) {
	t.Parallel()
	require.Equal(t, "abc", FitChars("abc", 3))
	require.Equal(t, "ab…", FitChars("abcd", 3))
	require.Equal(t, "éé…", FitChars("éééé", 3))
	got := FitChars(strings.Repeat("ü", 1000), 191)
	require.Equal(t, 191, utf8.RuneCountInString(got))
}

// Oversized strings in every column the hot paths write are stored cut to
// fit instead of failing the statement (strict mode refuses them).
func TestOversizedStringsAreStoredCutToFit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.insertWorkflow(InsertWorkflow{TotalSteps: 1, Jobs: []StepJob{
		{Queue: "default", Handler: "A", Payload: []byte(`[]`), MaxAttempts: 3, StepIndex: 0},
	}})
	huge := strings.Repeat("ö", 60_000) // 120 KB
	longName := strings.Repeat("n", 100_000)

	failed := logRow(id, EventFailed, 1)
	failed.ErrorMessage, failed.ErrorClass, failed.ErrorTrace = String(huge), String(longName), String(huge)
	require.NoError(t, e.s.InsertLogs(e.ctx, []LogRow{failed}))

	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		if err := tx.InsertEvents(WorkflowEvent{WorkflowID: id, StepIndex: 0, StepName: String(longName),
			StepType: String(longName), Handler: longName, Event: "step_failed", Queue: String(longName)}); err != nil {
			return err
		}
		_, err := tx.MarkFailed(id, []byte(`{}`), huge)
		return err
	}))

	var l struct {
		Message string `db:"error_message"`
		Class   string `db:"error_class"`
		Trace   string `db:"error_trace"`
	}
	require.NoError(t, e.db.Get(&l, render("SELECT error_message, error_class, error_trace FROM {logs} WHERE event = 'failed'", e.tables)))
	require.Equal(t, FitText(huge), l.Message)
	require.Equal(t, 255, utf8.RuneCountInString(l.Class))
	require.Equal(t, FitText(huge), l.Trace)

	var ev struct {
		Name, Type, Handler, Queue string
	}
	require.NoError(t, e.db.QueryRow(render("SELECT step_name, step_type, handler, queue FROM {workflow_events} WHERE workflow_id = ?", e.tables), id).
		Scan(&ev.Name, &ev.Type, &ev.Handler, &ev.Queue))
	require.Equal(t, 191, utf8.RuneCountInString(ev.Name))
	require.Equal(t, 64, utf8.RuneCountInString(ev.Type))
	require.Equal(t, 255, utf8.RuneCountInString(ev.Handler))
	require.Equal(t, 64, utf8.RuneCountInString(ev.Queue))

	wf, err := e.s.GetWorkflow(e.ctx, id)
	require.NoError(t, err)
	require.Equal(t, FitText(huge), wf.ErrorMessage.String)
}
