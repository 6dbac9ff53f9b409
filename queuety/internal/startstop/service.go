package startstop

import "context"

// Service is one background loop. Start launches it and fails only before
// anything runs; its ctx carries values, not the loop's life. Stop ends it
// and waits for a round under way.
type Service interface {
	Start(ctx context.Context) error
	Stop()
}

// StartAll starts svcs in order; when one fails, the ones already started
// are stopped again, last first, and its error is returned.
func StartAll[S Service](ctx context.Context, svcs []S) error {
	for i, s := range svcs {
		if err := s.Start(ctx); err != nil {
			for j := i - 1; j >= 0; j-- {
				svcs[j].Stop()
			}
			return err
		}
	}
	return nil
}

// StopAll stops svcs in order.
func StopAll[S Service](svcs []S) {
	for _, s := range svcs {
		s.Stop()
	}
}
