package phpjson

// ConcurrencyGroup is Queue::dispatch's rule for a job's concurrency_group
// and concurrency_limit: the group is trimmed with PHP's trim(), and both
// are dropped (stored NULL) when the group is blank or the limit is below
// 1. It lives beside the casts because the storage (every job insert) and
// the workflow model (a step job's columns, before the insert) both apply
// it and neither may import the other.
func ConcurrencyGroup[N ~int | ~int64](group string, limit N) (string, N) {
	g := Trim(group)
	if g == "" || limit < 1 {
		return "", 0
	}
	return g, limit
}
