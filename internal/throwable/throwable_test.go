package throwable

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

type classed struct{}

func (classed) Error() string      { return "declined" }
func (classed) ErrorClass() string { return `App\PaymentDeclined` }

type valueErr struct{}

func (valueErr) Error() string { return "v" }

func TestClass(t *testing.T) {
	t.Parallel()
	require.Equal(t, "errors.errorString", Class(errors.New("x")))
	require.Equal(t, "fmt.wrapError", Class(fmt.Errorf("ctx: %w", errors.New("x"))))
	require.Equal(t, "throwable.valueErr", Class(valueErr{}))
	require.Equal(t, `App\PaymentDeclined`, Class(fmt.Errorf("ctx: %w", classed{})))
	require.Equal(t, "panic", Class(&Panic{Value: 1}))
}

func TestCatch(t *testing.T) {
	t.Parallel()
	run := func() (err error) {
		defer Catch(&err)
		panic("kaboom")
	}
	err := run()
	var p *Panic
	require.ErrorAs(t, err, &p)
	require.Equal(t, "panic: kaboom", err.Error())
	require.Equal(t, "panic", Class(err))
	require.Contains(t, Trace(err), "throwable_test.go")

	ok := func() (err error) {
		defer Catch(&err)
		return errors.New("plain")
	}
	require.EqualError(t, ok(), "plain")
}

func TestTraceChain(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("outer: %w", errors.New("inner"))
	require.Equal(t, "#0 *fmt.wrapError: outer: inner\n#1 *errors.errorString: inner", Trace(err))
}
