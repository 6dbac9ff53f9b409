package store

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func strp(s string) *string { return &s }

func TestNormalizeQueuetyPrefix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   *string
		want string
	}{
		{"undefined", nil, "queuety_"},
		{"plain", strp("themequeue"), "themequeue_"},
		{"trailing underscore", strp("themequeue_"), "themequeue_"},
		{"padded, doubled underscore", strp(" themequeue__ "), "themequeue_"},
		{"empty", strp(""), ""},
		{"blank", strp(" \t "), ""},
		{"inner underscores kept", strp("my_theme_q"), "my_theme_q_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, NormalizeQueuetyPrefix(tc.in))
		})
	}
}

func TestNamingResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		naming    Naming
		jobs      string
		logs      string
		wantError string
	}{
		{name: "nil queuety prefix", naming: Naming{DBPrefix: "wp_"}, jobs: "wp_queuety_jobs", logs: "wp_queuety_logs"},
		{name: "themequeue", naming: Naming{DBPrefix: "wp_", QueuetyPrefix: strp("themequeue")}, jobs: "wp_themequeue_jobs", logs: "wp_themequeue_logs"},
		{name: "themequeue_", naming: Naming{DBPrefix: "wp_", QueuetyPrefix: strp("themequeue_")}, jobs: "wp_themequeue_jobs", logs: "wp_themequeue_logs"},
		{name: "padded themequeue__", naming: Naming{DBPrefix: "wp_", QueuetyPrefix: strp(" themequeue__ ")}, jobs: "wp_themequeue_jobs", logs: "wp_themequeue_logs"},
		{name: "blank queuety prefix", naming: Naming{DBPrefix: "wp_", QueuetyPrefix: strp("  ")}, jobs: "wp_jobs", logs: "wp_logs"},
		{name: "empty queuety prefix", naming: Naming{DBPrefix: "wp_", QueuetyPrefix: strp("")}, jobs: "wp_jobs", logs: "wp_logs"},
		{name: "multisite db prefix", naming: Naming{DBPrefix: "wp_2_"}, jobs: "wp_2_queuety_jobs", logs: "wp_2_queuety_logs"},
		{
			name:   "override used as-is, without the queuety prefix",
			naming: Naming{DBPrefix: "wp_", QueuetyPrefix: strp("themequeue"), Overrides: map[string]string{"jobs": "custom_jobs"}},
			jobs:   "wp_custom_jobs", logs: "wp_themequeue_logs",
		},
		{
			name:   "override with the default prefix",
			naming: Naming{DBPrefix: "wp_", Overrides: map[string]string{"jobs": "custom_jobs"}},
			jobs:   "wp_custom_jobs", logs: "wp_queuety_logs",
		},
		{
			name:      "unknown override suffix",
			naming:    Naming{DBPrefix: "wp_", Overrides: map[string]string{"job": "custom_jobs"}},
			wantError: `table override "job": no Queuety table has that suffix`,
		},
		{
			name:      "override is not trimmed, so a space is an invalid character",
			naming:    Naming{DBPrefix: "wp_", Overrides: map[string]string{"jobs": " custom_jobs"}},
			wantError: `table name "wp_ custom_jobs": only letters, digits, '_' and '$' are supported`,
		},
		{
			name:      "backquote in the db prefix",
			naming:    Naming{DBPrefix: "wp`_"},
			wantError: "only letters, digits, '_' and '$' are supported",
		},
		{
			name:      "dash in the queuety prefix",
			naming:    Naming{DBPrefix: "wp_", QueuetyPrefix: strp("theme-queue")},
			wantError: `table name "wp_theme-queue_jobs"`,
		},
		{
			name:      "too long",
			naming:    Naming{DBPrefix: strings.Repeat("p", 50) + "_"},
			wantError: "must be 1 to 64 characters",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tables, err := tc.naming.Resolve()
			if tc.wantError != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.wantError)
				require.Nil(t, tables)
				return
			}
			require.NoError(t, err)
			require.Len(t, tables, 16+len(OwnTableSuffixes()))
			require.Equal(t, tc.jobs, tables["jobs"])
			require.Equal(t, tc.logs, tables["logs"])
		})
	}
}

func TestNamingResolveAllTables(t *testing.T) {
	t.Parallel()
	tables := mustResolve(t, Naming{DBPrefix: "wp_"})
	want := []string{
		"jobs", "workflows", "logs", "schedules", "queue_states", "webhooks", "signals",
		"workflow_dependencies", "workflow_dispatch_keys", "locks", "batches", "chunks",
		"workflow_events", "artifacts", "state_machines", "state_machine_events",
	}
	require.Equal(t, want, TableSuffixes())
	for _, s := range want {
		require.Equal(t, "wp_queuety_"+s, tables[s])
	}
	// TableSuffixes hands out a copy.
	TableSuffixes()[0] = "mutated"
	require.Equal(t, "jobs", TableSuffixes()[0])
}

// TestNamingAgainstMariaDB migrates with a custom naming and checks the
// server holds exactly the resolved tables.
func TestNamingAgainstMariaDB(t *testing.T) {
	t.Parallel()
	e := newEnvNamed(t, Naming{
		DBPrefix:      "wp_",
		QueuetyPrefix: strp(" themequeue__ "),
		Overrides:     map[string]string{"jobs": "custom_jobs"},
	}, true)
	var names []string
	require.NoError(t, e.db.SelectContext(e.ctx, &names,
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()"))
	want := []string{"wp_custom_jobs"}
	for _, s := range append(TableSuffixes()[1:], OwnTableSuffixes()...) {
		want = append(want, "wp_themequeue_"+s)
	}
	sort.Strings(names)
	sort.Strings(want)
	require.Equal(t, want, names)

	// The store's queries hit the resolved names.
	id := e.dispatch(InsertJob{})
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM `wp_custom_jobs` WHERE id = ?", id))
	require.NoError(t, e.s.CheckSchema(e.ctx))
}
