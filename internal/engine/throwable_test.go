package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// A panicking local activity is recorded as a panicking job or step is:
// error_class "panic", message "panic: <value>". Earlier builds named the
// class "errors.errorString" and put the stack into the message.
func TestLocalActivityPanicIsRecordedAsAPanic(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	env.step(t, "Boom", func(context.Context, *workflow.State) (*phpjson.Object, error) { panic("kaboom") })
	id := env.Dispatch(workflow.New("boom").LocalActivity("Boom", workflow.LocalActivityOptions{MaxAttempts: 1}), enginetest.Obj())
	env.claimAndRun()
	require.Equal(t, "failed", env.Workflow(id).Status)
	require.Equal(t, "panic: kaboom", env.Workflow(id).ErrorMessage.String)
	atts := env.attempts(id)
	require.Len(t, atts, 1)
	require.Equal(t, "panic", atts[0].ErrorClass.String)
}

// NonRetryable only marks an error: the class recorded, and matched against
// non_retryable_error_types, is the marked error's.
func TestNonRetryableIsClassedByTheErrorItMarks(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	env.step(t, "Charge", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return nil, workflow.NonRetryable(&classed{`App\Errors\PaymentDeclined`, "card declined"})
	})
	id := env.Dispatch(workflow.New("pay").LocalActivity("Charge", workflow.LocalActivityOptions{MaxAttempts: 5}), enginetest.Obj())
	env.claimAndRun()
	require.Equal(t, "failed", env.Workflow(id).Status)
	require.Equal(t, `App\Errors\PaymentDeclined`, env.attempts(id)[0].ErrorClass.String)
	require.Equal(t, "errors.errorString", (&workflow.NonRetryableError{Err: errors.New("x")}).ErrorClass())
}
