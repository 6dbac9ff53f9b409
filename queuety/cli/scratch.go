package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/urfave/cli/v2"

	store "github.com/queuety-go/queuety/sql"
)

// BenchServer is the server `queuety bench` creates its database on when
// neither --dsn, QUEUETY_DSN nor --wp-config names one.
const BenchServer = "root@tcp(127.0.0.1:3306)/"

// markerTable records which tool may treat which jobs table as its own
// scratch space (store.MarkerTable).
const markerTable = store.MarkerTable

// benchHelp is the database paragraph of every bench command's help.
const benchHelp = `Bench runs in a database of its own, queuety_bench_<random>, created on the
server of --dsn / QUEUETY_DSN / --wp-config (or 127.0.0.1:3306 as root) and
dropped at the end, also when Ctrl-C or SIGTERM stops the run; the
database those name is never touched. --bench-dsn names a database to use
instead: bench empties its bench_ tables first, so it refuses one holding
rows bench did not write, in any table (a database it may empty is marked in
its table ` + markerTable + `).`

// benchDSNFlag has no environment variable on purpose: an exported
// variable must never aim a command that empties tables at a site.
func benchDSNFlag() cli.Flag {
	return &cli.StringFlag{Name: "bench-dsn", Usage: "run in this `DSN`'s database, emptying its bench tables, instead of a new one; refused when it holds rows bench did not write"}
}

// benchDB is the database one benchmark runs in.
type benchDB struct {
	dsn  string
	name string // set when bench created it, and drops it
}

// newBenchDB picks the benchmark's database: --bench-dsn, or a new one on
// the configured server (configured is the DSN the global flags give).
func newBenchDB(c *cli.Context, configured string) (benchDB, error) {
	if d := c.String("bench-dsn"); d != "" {
		return benchDB{dsn: d}, nil
	}
	server := configured
	if server == "" {
		server = BenchServer
	}
	cfg, err := mysql.ParseDSN(server)
	if err != nil {
		return benchDB{}, usagef("--dsn: %v", err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	cfg.DBName = "queuety_bench_" + hex.EncodeToString(rnd[:])
	fmt.Fprintf(c.App.ErrWriter, "bench: running in a new database %s on %s (dropped at the end)\n", cfg.DBName, cfg.Addr)
	return benchDB{dsn: cfg.FormatDSN(), name: cfg.DBName}, nil
}

// drop removes the database bench created; an error is reported, not
// returned: the benchmark's figures are still good.
func (b benchDB) drop(stderr io.Writer) {
	if b.name == "" {
		return
	}
	err := withServer(context.Background(), b.dsn, func(db *sqlx.DB) error {
		return store.DropDatabase(context.Background(), db, b.name)
	})
	if err != nil {
		fmt.Fprintf(stderr, "bench: could not drop database %s (%v): drop it by hand\n", b.name, err)
	}
}

// dropOnSignal drops the database bench created when SIGINT or SIGTERM
// stops the run, then exits 130: the benchmark loops do not watch a
// context, and without this the default action killed the process with the
// database left behind. stop ends the watch (the normal path drops it).
func (b benchDB) dropOnSignal(stderr io.Writer) (stop func()) {
	if b.name == "" {
		return func() {}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "bench: %v: dropping database %s\n", sig, b.name)
			b.drop(stderr)
			os.Exit(130)
		case <-quit:
		}
	}()
	return func() { signal.Stop(sigs); close(quit) }
}

// withServer runs fn on a connection to dsn's server without a database.
func withServer(ctx context.Context, dsn string, fn func(*sqlx.DB) error) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	cfg.DBName = ""
	db, err := sqlx.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(db)
}

// errForeignRows says a database holds rows the tool did not write.
type errForeignRows struct{ table string }

func (e errForeignRows) Error() string { return "table " + e.table + " holds rows" }

// checkScratch says whether tool may use st's tables as scratch space,
// before anything is created or migrated. Rows in a table that is not one
// of st's (a site's wp_posts, another prefix's jobs) always belong to
// someone else; rows in st's tables are tool's only when a marker says so.
// Otherwise it returns errForeignRows naming the first table with rows.
// Read-only.
func checkScratch(ctx context.Context, st *store.Store, tool string) (marked bool, err error) {
	if marked, err = st.ScratchMarked(ctx, tool); err != nil {
		return false, err
	}
	tables, err := st.BaseTables(ctx)
	if err != nil {
		return false, err
	}
	own := map[string]bool{markerTable: true}
	for _, name := range st.Tables() {
		own[name] = true
	}
	for _, name := range tables {
		if own[name] && (marked || name == markerTable) {
			continue
		}
		has, err := st.TableHasRows(ctx, name)
		if err != nil {
			return false, err
		}
		if has {
			return false, errForeignRows{name}
		}
	}
	return marked, nil
}
