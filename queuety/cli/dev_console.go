package cli

import (
	"fmt"
	"io"
	"time"
)

// bannerEvery is how many progress lines dev prints before it prints the
// dashboard's URL and token again.
const bannerEvery = 20

// devConsole is dev's terminal output: a progress line when the counts
// change (a still queue prints nothing, so what is on screen stays), and
// now and then the banner again (the URL, token and metrics lines), so a
// busy demo does not scroll them away.
type devConsole struct {
	out    io.Writer
	banner string // "" without the dashboard

	last  string // the last progress line printed, without its time
	since int    // progress lines since the banner
}

func (d *devConsole) progress(now time.Time, line string) {
	if line == d.last {
		return
	}
	d.last = line
	if d.banner != "" && d.since >= bannerEvery {
		fmt.Fprint(d.out, d.banner)
		d.since = 0
	}
	fmt.Fprintf(d.out, "%s %s\n", now.Format(time.TimeOnly), line)
	d.since++
}
