package queuety

import (
	"context"

	"github.com/queuety-go/queuety/workflow"
)

// Dispatcher is the dispatching half of Client: what a handler or step
// that starts more work (fans out jobs, starts a follow-up workflow) needs.
// Take a Dispatcher rather than a *Client in such code, and a test can give
// it queuetytest.Dispatcher, which records the dispatches instead of
// writing rows.
type Dispatcher interface {
	Dispatch(ctx context.Context, handler string, payload any, opts ...DispatchOption) (Dispatched, error)
	DispatchWorkflow(ctx context.Context, d *workflow.Dispatch) (id int64, existing bool, err error)
}

var _ Dispatcher = (*Client)(nil)
