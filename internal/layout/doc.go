// Package layout holds no code: its tests are the repository's layering
// rules, checked on every `go test ./...` so the layout stays true without
// a reviewer.
//
//   - The public packages (queuety, queuety/cli, queuety/machine,
//     queuety/phpjson, workflow, queuetytest, sql) name only public types in their exported
//     signatures: a type from an internal/ package may appear only when a
//     public package exports an alias of it (queuety/phpjson), because a
//     user's module cannot import internal/ to name it (publicapi_test.go).
//   - No public package but sql names a storage type (a store row, *Store)
//     in its exported API: users get views of their own; and sql hands out
//     no transaction or querier, so its named methods stay the only way to
//     the tables (storage_test.go).
//   - workflow never depends on the engine or the steps; only the steps,
//     the PHP pool and queuety import the engine; no top-level internal/ package
//     depends on queuety (adapters that implement queuety's interfaces live
//     in queuety/internal/); below queuety, the composition root, no
//     package reaches two subsystems (state machines, webhooks, schedules,
//     maintenance) (imports_test.go).
//   - SQL text lives in sql/ as named queries (sqltext_test.go).
//   - Every package has a package doc (pkgdoc_test.go).
//   - Test-support packages (testdb, storetest, testbin, commiteater,
//     enginetest) stay out of what the binary links (testsupport_test.go).
//
// The tests read the module with `go list`, so they need the go command,
// which `go test` already is.
package layout
