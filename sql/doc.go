// Package store is queuety-go's one storage seam: the embedded DDL of the
// Queuety tables and our additive extensions, every named query, and the
// Store whose methods the worker, the CLI and the engine call. It lives in
// sql/ because the product's top level fixes that directory; the package is
// called store so it does not shadow database/sql.
//
// Every method is tested against MariaDB (see store_test.go).
package store
