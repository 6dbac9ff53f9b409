package engine

// TestKinds are the step kinds the tests of this package give their
// engines. Package steps imports engine, so these tests cannot import it;
// kinds_test.go (package engine_test, in the same test binary) sets it to
// steps.All() before any test runs.
var TestKinds []Kind
