//go:build !linux

package phppool

// rss is not read outside Linux: the memory limit is not enforced there.
func rss(int) (int64, bool) { return 0, false }

const rssWatched = false
