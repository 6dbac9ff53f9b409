package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dev's progress: a line only when it changed, and the banner again after
// every bannerEvery lines printed, so the URL and token stay in view.
func TestDevConsoleKeepsTheBannerInView(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	d := &devConsole{out: &out, banner: "dashboard: URL\noperator token: T\n"}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for range 100 {
		d.progress(now, "pending 0")
	}
	require.Equal(t, "10:00:00 pending 0\n", out.String(), "an unchanged line is printed once")
	out.Reset()
	for i := range 2 * bannerEvery {
		d.progress(now, "pending "+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 2*bannerEvery+2*2, "two banners of two lines among the progress")
	require.Equal(t, "dashboard: URL", lines[bannerEvery-1], "the banner after the first %d lines", bannerEvery)
	require.Equal(t, 2, strings.Count(out.String(), "operator token: T"))
}
