package workflow

import (
	"context"
	"errors"
)

// Calls made with row locks held.
//
// The engine reads a PHP class's settings and runs a for_each reducer
// inside a step transaction, with the workflow and job rows locked. With
// many sites a site's PHP pool may not be running there (stopped when
// idle, or given away at the pools' cap), and starting it, or waiting for
// a place at the cap, takes seconds with the rows held: another worker's
// step of the workflow, a signal or a cancel then wait behind it, and the
// connection is held all along. So the engine marks such calls
// (WithRowLocks); a source that would have to start its pool or wait for
// it answers ErrPHPNotReady at once instead, and the engine rolls the
// transaction back, waits for PHP with no row locked, and runs the
// transaction again (nothing of the first try is written, nothing run
// twice: the step's handler ran before the transaction began).

// ErrPHPNotReady is a call's answer, made with row locks held
// (WithRowLocks), when it would have had to start a PHP pool, wait for a
// place for it, or read a class's settings in PHP.
var ErrPHPNotReady = errors.New("PHP is not ready for a call made with row locks held")

type rowLocksKey struct{}

// WithRowLocks marks ctx as a call's made with row locks held.
func WithRowLocks(ctx context.Context) context.Context {
	return context.WithValue(ctx, rowLocksKey{}, true)
}

// RowLocksHeld reports whether ctx was marked by WithRowLocks.
func RowLocksHeld(ctx context.Context) bool {
	held, _ := ctx.Value(rowLocksKey{}).(bool)
	return held
}

// PHPHolder is a PHP runner whose calls may have to start a pool or wait
// for a place first (the pools of many sites). Hold waits for its pool,
// with no row locked, and keeps it running until release: the calls the
// engine then makes with row locks held find it there.
type PHPHolder interface {
	Hold(ctx context.Context) (release func(), err error)
}
