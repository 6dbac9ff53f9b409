package store

import (
	"fmt"
	"strings"
)

// Table suffixes, in the order the plugin creates them.
var tableSuffixes = []string{
	"jobs", "workflows", "logs", "schedules", "queue_states", "webhooks", "signals",
	"workflow_dependencies", "workflow_dispatch_keys", "locks", "batches", "chunks",
	"workflow_events", "artifacts", "state_machines", "state_machine_events",
}

// ownSuffixes are queuety-go's own tables (schema/queuety_go.sql), named
// like the plugin's (DBPrefix + Queuety prefix + suffix) but never
// overridable: PHP does not know them.
var ownSuffixes = []string{"workers", "worker_sessions", "activity_executions", "activity_attempts", "for_each_plans"}

// TableSuffixes returns the 16 Queuety table suffixes in creation order.
func TableSuffixes() []string { return append([]string(nil), tableSuffixes...) }

// OwnTableSuffixes returns the suffixes of queuety-go's own tables.
func OwnTableSuffixes() []string { return append([]string(nil), ownSuffixes...) }

// allSuffixes is every table the store may name in a query.
func allSuffixes() []string { return append(TableSuffixes(), ownSuffixes...) }

// Naming is how Queuety resolves a table name (spec §1.1, Config::table_*):
// full name = DBPrefix + (override, or QueuetyPrefix + suffix).
type Naming struct {
	// DBPrefix is WordPress's $table_prefix, e.g. "wp_" or "wp_2_".
	DBPrefix string
	// QueuetyPrefix is QUEUETY_TABLE_PREFIX. Nil means the constant is not
	// defined ("queuety_"); an empty or blank value means no prefix at all.
	QueuetyPrefix *string
	// Overrides maps a suffix ("jobs") to the value of its QUEUETY_TABLE_JOBS
	// style constant, used as-is without the Queuety prefix.
	Overrides map[string]string
}

// Tables holds resolved (unquoted) table names by suffix.
type Tables map[string]string

// NormalizeQueuetyPrefix applies Config::table_prefix(): trimmed, trailing
// underscores folded into exactly one, blank means none.
func NormalizeQueuetyPrefix(p *string) string {
	if p == nil {
		return "queuety_"
	}
	v := strings.TrimSpace(*p)
	if v == "" {
		return ""
	}
	return strings.TrimRight(v, "_") + "_"
}

// Resolve returns the table names, or an error naming a bad one.
func (n Naming) Resolve() (Tables, error) {
	qp := NormalizeQueuetyPrefix(n.QueuetyPrefix)
	for k := range n.Overrides {
		if !contains(tableSuffixes, k) {
			return nil, fmt.Errorf("table override %q: no Queuety table has that suffix (known: %s)", k, strings.Join(tableSuffixes, ", "))
		}
	}
	t := make(Tables, len(tableSuffixes)+len(ownSuffixes))
	for _, s := range allSuffixes() {
		base := qp + s
		if o, ok := n.Overrides[s]; ok {
			base = o
		}
		name := n.DBPrefix + base
		if err := validTableName(name); err != nil {
			return nil, err
		}
		t[s] = name
	}
	return t, nil
}

// validTableName keeps names to what we can safely backquote into SQL.
func validTableName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("table name %q: must be 1 to 64 characters", name)
	}
	for _, r := range name {
		if !(r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("table name %q: only letters, digits, '_' and '$' are supported", name)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
