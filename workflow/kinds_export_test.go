package workflow

// TestKinds are the step kinds the tests of this package give their
// engines. Package steps imports workflow, so these tests cannot import
// it; kinds_test.go (package workflow_test, in the same test binary) sets
// it to steps.All() before any test runs.
var TestKinds []Kind
