// Package enginetest is the test environment the workflow engine's tests
// and the step kinds' tests share: a fresh migrated database, a store, an
// engine running the Go versions of the recorded scenarios' step classes,
// and the helpers that dispatch workflows, run their jobs as a worker
// would and read back what they wrote.
//
// Only tests import it (package engine_test and package steps_test). It
// sits under internal/engine, so it never imports internal/steps: the
// caller gives New the kinds to run. Its reads go through the store, since
// SQL text lives in sql/ and in _test.go files only.
package enginetest
