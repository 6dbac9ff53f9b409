package phppool

import (
	"log/slog"
	"sync/atomic"
)

var discard = slog.New(slog.DiscardHandler)

type atomicInt struct{ atomic.Int64 }
