package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"
)

// wp-cli's --format, for the commands whose `wp queuety` counterpart takes
// one (list, metrics, log, schedule list, webhook list, workflow list,
// workflow timeline, workflow artifacts). table is the command's own table;
// json, csv and yaml print the plugin's fields under the plugin's names,
// as wp-cli's format_items does; ids prints the first field (the id) of
// each row, space-separated; count prints the number of rows. --json
// keeps the command's own, fuller JSON.

// wpFormats are the formats wp-cli's format_items takes.
var wpFormats = []string{"table", "json", "csv", "yaml", "ids", "count"}

// formatFlag is a new --format flag (flags hold parse state).
func formatFlag() cli.Flag {
	return &cli.StringFlag{Name: "format", Value: "table", Usage: "table, json, csv, yaml, ids or count, as wp-cli's --format (json, csv and yaml with the plugin's field names; --json is this command's own JSON)"}
}

// checkFormat refuses a --format wp-cli does not have, and ids where the
// rows have no id.
func checkFormat(c *cli.Context, hasIDs bool) error {
	f := c.String("format")
	if !slices.Contains(wpFormats, f) {
		return usagef("--format %q: want one of %s", f, strings.Join(wpFormats, ", "))
	}
	if f == "ids" && !hasIDs {
		return usagef("--format ids: %s rows have no id (use table, json, csv, yaml or count)", c.Command.FullName())
	}
	return nil
}

// items is what the plugin hands format_items: its fields, in its order,
// and one value per field a row (nil is null).
type items struct {
	fields []string
	rows   [][]any
}

func (it *items) add(values ...any) { it.rows = append(it.rows, values) }

func printItems(c *cli.Context, format string, it items) error {
	w := c.App.Writer
	switch format {
	case "count":
		_, err := fmt.Fprintln(w, len(it.rows))
		return err
	case "ids":
		ids := make([]string, len(it.rows))
		for i, r := range it.rows {
			ids[i] = cell(r[0])
		}
		_, err := fmt.Fprintln(w, strings.Join(ids, " "))
		return err
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write(it.fields)
		for _, r := range it.rows {
			rec := make([]string, len(r))
			for i, v := range r {
				rec[i] = cell(v)
			}
			_ = cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	case "yaml":
		doc := &yaml.Node{Kind: yaml.SequenceNode}
		for _, r := range it.rows {
			m := &yaml.Node{Kind: yaml.MappingNode}
			for i, f := range it.fields {
				var v yaml.Node
				if err := v.Encode(r[i]); err != nil {
					return err
				}
				m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f}, &v)
			}
			doc.Content = append(doc.Content, m)
		}
		out, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "---\n%s", out)
		return err
	}
	// json: format_items' json_encode of the rows, compact, keys in order.
	b := []byte{'['}
	for k, r := range it.rows {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for i, f := range it.fields {
			if i > 0 {
				b = append(b, ',')
			}
			key, _ := json.Marshal(f)
			val, err := json.Marshal(r[i])
			if err != nil {
				return err
			}
			b = append(append(append(b, key...), ':'), val...)
		}
		b = append(b, '}')
	}
	_, err := fmt.Fprintf(w, "%s]\n", b)
	return err
}

// cell is a value as csv and ids print it (null: empty).
func cell(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// orNil gives a pointer's value, or nil for a nil pointer, for items.
func orNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
