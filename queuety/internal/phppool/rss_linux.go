package phppool

import (
	"bytes"
	"os"
	"strconv"
)

// rss is the resident memory of process pid in bytes (VmRSS of
// /proc/<pid>/status); ok is false when it cannot be read (the process is
// gone).
func rss(pid int) (n int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		rest, found := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !found {
			continue
		}
		f := bytes.Fields(rest) // "123456", "kB"
		if len(f) == 0 {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// rssWatched says whether rss reads anything on this system.
const rssWatched = true
