package dashboard

import (
	"context"
	"regexp"
	"slices"
	"strings"

	store "github.com/queuety-go/queuety/sql"
)

// Buried jobs are grouped by handler, error class and the error message
// with its variable parts replaced: "demo failure 9" and "demo failure
// 19" are one group, as are two timeouts naming different URLs or ids.
// The plugin stores the class in the log rows only, so a group's class is
// that of each job's newest log row with one.

// Variable parts of an error message, replaced in this order: quoted
// values, UUIDs, URLs, long hex ids, then any number.
var (
	quotedRE = regexp.MustCompile(`"[^"\n]*"|'[^'\n]*'|` + "`[^`\n]*`")
	uuidRE   = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	urlRE    = regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`)
	hexRE    = regexp.MustCompile(`\b(?:0x)?[0-9a-fA-F]{8,}\b`)
	numberRE = regexp.MustCompile(`\d+(?:[.,]\d+)*`)
)

// normalizeError is the group pattern of an error message.
func normalizeError(msg string) string {
	s := strings.TrimSpace(msg)
	s = quotedRE.ReplaceAllString(s, "‹…›")
	s = uuidRE.ReplaceAllString(s, "‹uuid›")
	s = urlRE.ReplaceAllString(s, "‹url›")
	s = hexRE.ReplaceAllStringFunc(s, func(h string) string {
		// A hash or id mixes digits and letters; all digits is a number
		// (below), all letters a word ("deadbeef" stays).
		if strings.ContainsAny(h, "0123456789") && strings.ContainsAny(strings.ToLower(h), "abcdef") {
			return "‹id›"
		}
		return h
	})
	return numberRE.ReplaceAllString(s, "‹n›")
}

// buriedGroup is one line of "buried jobs by handler, error class and
// message".
type buriedGroup struct {
	Handler, Class, Pattern string
	// Example is the newest message of the group, as written.
	Example string
	N       int
	lastID  int64
}

func groupKey(handler, class, pattern string) string {
	return handler + "\x00" + class + "\x00" + pattern
}

// groupBuried groups rows (newest first) and returns the largest groups
// first, at most limit.
func groupBuried(rows []store.BuriedRow, limit int) []buriedGroup {
	byKey := map[string]*buriedGroup{}
	var order []*buriedGroup
	for _, r := range rows {
		p := normalizeError(r.Error)
		k := groupKey(r.Handler, r.Class, p)
		g, ok := byKey[k]
		if !ok {
			g = &buriedGroup{Handler: r.Handler, Class: r.Class, Pattern: p, Example: r.Error, lastID: r.ID}
			byKey[k] = g
			order = append(order, g)
		}
		g.N++
	}
	slices.SortStableFunc(order, func(a, b *buriedGroup) int { return b.N - a.N })
	out := make([]buriedGroup, 0, min(len(order), limit))
	for _, g := range order[:min(len(order), limit)] {
		out = append(out, *g)
	}
	return out
}

// buriedGroupIDs lists the ids of one group among the newest buriedScan
// buried jobs, oldest first, at most limit.
func (s *site) buriedGroupIDs(ctx context.Context, handler, class, pattern string, limit int) ([]int64, error) {
	rows, err := s.store().BuriedScan(ctx, buriedScan)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for i := len(rows) - 1; i >= 0 && len(ids) < limit; i-- {
		r := rows[i]
		if r.Handler == handler && r.Class == class && normalizeError(r.Error) == pattern {
			ids = append(ids, r.ID)
		}
	}
	return ids, nil
}
