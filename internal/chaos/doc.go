// Package chaos holds the chaos suite: `queuety work` processes draining
// thousands of jobs while the suite kills workers (SIGKILL), kills and
// restarts a private MariaDB, cuts connections through a TCP proxy, and runs
// PHP workers that claim as the Queuety plugin does beside the daemons.
// Every handler run is recorded in a side table, and each round counts lost
// jobs, double completions and handler runs beyond the first.
//
// Plain `go test ./internal/chaos` runs the short version; QUEUETY_CHAOS_ROUNDS
// (set by `make chaos`) sets the number of rounds of each scenario.
package chaos
