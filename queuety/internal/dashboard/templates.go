package dashboard

import (
	"database/sql"
	"fmt"
	"html/template"
	"strings"
	"time"
)

// pageNames are the page templates; each is parsed with layout.html.
var pageNames = []string{"login", "overview", "jobs", "job", "workflows", "workflow", "confirm", "error",
	"schedules", "batches", "batch", "machines", "machine", "webhooks", "workers", "sites"}

func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: layout: %w", err)
	}
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.ParseFS(templateFiles, "templates/"+name+".html"); err != nil {
			return nil, fmt.Errorf("dashboard: %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

var funcs = template.FuncMap{
	"age": func(d time.Duration) string {
		if d <= 0 {
			return "–"
		}
		return d.Round(time.Second).String()
	},
	"when": func(v any) string {
		switch t := v.(type) {
		case time.Time:
			if t.IsZero() {
				return "–"
			}
			return t.UTC().Format(time.DateTime)
		case sql.NullTime:
			if !t.Valid {
				return "–"
			}
			return t.Time.UTC().Format(time.DateTime)
		case *time.Time:
			if t == nil {
				return "–"
			}
			return t.UTC().Format(time.DateTime)
		case *string:
			if t == nil {
				return "–"
			}
			return *t
		case string:
			return t
		}
		return fmt.Sprint(v)
	},
	"str": func(v any) string {
		switch s := v.(type) {
		case sql.NullString:
			return s.String
		case *string:
			if s == nil {
				return ""
			}
			return *s
		case sql.NullInt64:
			if !s.Valid {
				return ""
			}
			return fmt.Sprint(s.Int64)
		}
		return fmt.Sprint(v)
	},
	"short": func(s string, n int) string { return truncate(strings.TrimSpace(s), n) },
	"join":  strings.Join,
	"list":  func(s ...string) []string { return s },
	"deref": func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	},
}
