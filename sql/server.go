package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// prepare fills in the driver settings queuety-go depends on: times read
// and written in UTC (Queuety's app clock is gmdate), the session time zone
// UTC so our NOW() matches, and client-side parameter interpolation (one
// round trip a statement instead of prepare/execute/close). The driver's
// default charset is already utf8mb4. Its log lines (one per broken
// connection, which we also get as errors) go to logger at debug level.
func prepare(dsn string, logger *slog.Logger) (*mysql.Config, error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	if logger != nil {
		cfg.Logger = driverLogger{logger}
	}
	return cfg, nil
}

// dsnExample is the DSN form our messages show.
const dsnExample = "user:pass@tcp(127.0.0.1:3306)/wordpress"

// parseDSN is mysql.ParseDSN with the driver's reason kept: its errors
// wrap nothing, so unwrapping them printed "%!w(<nil>)".
func parseDSN(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		reason := strings.TrimPrefix(err.Error(), "invalid DSN: ")
		return nil, fmt.Errorf("invalid DSN: %s (want the form %s)", reason, dsnExample)
	}
	return cfg, nil
}

// CheckDSN refuses a DSN that cannot be parsed or names no database, before
// anything connects: without a database every query fails with "No
// database selected", whose fix is not `queuety migrate`.
func CheckDSN(dsn string) error {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return err
	}
	if cfg.DBName == "" {
		return fmt.Errorf("the DSN names no database: put the database after the slash, as in %s", dsnExample)
	}
	return nil
}

// connectError says what went wrong when the server answered but refused,
// and what to do; only errors that are no answer at all are "cannot reach".
func connectError(dsn string, err error) error {
	where := redact(dsn)
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return fmt.Errorf("cannot reach MySQL at %s: %w", where, err)
	}
	cfg, _ := mysql.ParseDSN(dsn)
	db, user := "", ""
	if cfg != nil {
		db, user = cfg.DBName, cfg.User
	}
	switch me.Number {
	case 1045, 1698: // access denied (password; unix_socket authentication)
		return fmt.Errorf("MySQL at %s refused the login: %w: check the user and password (the DSN, or DB_USER and DB_PASSWORD in wp-config.php)", where, err)
	case 1044: // access denied to the database
		return fmt.Errorf("MySQL at %s does not let %q use database %q: %w: GRANT ALL ON `%s`.* TO the user, or name another database", where, user, db, err, db)
	case 1049: // unknown database
		return fmt.Errorf("database %q does not exist on MySQL at %s (%w): create it with CREATE DATABASE `%s` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci; then run queuety migrate, or fix the database name in the DSN", db, where, err, db)
	}
	return fmt.Errorf("MySQL at %s refused the connection: %w", where, err)
}

// PrepareDSN returns dsn with prepare's settings.
func PrepareDSN(dsn string) (string, error) {
	cfg, err := prepare(dsn, nil)
	if err != nil {
		return "", err
	}
	return cfg.FormatDSN(), nil
}

type driverLogger struct{ l *slog.Logger }

func (d driverLogger) Print(v ...any) { d.l.Debug("mysql driver", "msg", fmt.Sprint(v...)) }

// Open connects with prepare's settings and checks the connection.
func Open(ctx context.Context, dsn string, maxConns int, logger *slog.Logger) (*sqlx.DB, error) {
	db, _, err := OpenWithPipeline(ctx, dsn, maxConns, 0, logger)
	return db, err
}

// OpenWithPipeline is Open, and with pipeConns > 0 a second handle for
// Store.UsePipeline: the same settings, and connections that accept
// several statements a packet (the driver's multiStatements), which only
// pipelined transactions send. It is kept apart from the main handle so
// that no other statement is ever sent on such a connection, and it
// connects only when a pipelined transaction first runs.
func OpenWithPipeline(ctx context.Context, dsn string, maxConns, pipeConns int, logger *slog.Logger) (db, pipe *sqlx.DB, err error) {
	cfg, err := prepare(dsn, logger)
	if err != nil {
		return nil, nil, err
	}
	// Every transaction of ours runs READ COMMITTED (no gap locks, so
	// concurrent claims and step transactions do not deadlock on
	// index gaps). Setting it per session, not per transaction, saves a
	// round trip per transaction. MySQL 8 and MariaDB 11.1+ name the
	// variable transaction_isolation, older MariaDB only tx_isolation.
	for _, name := range []string{"transaction_isolation", "tx_isolation"} {
		cfg.Params[name] = "'READ-COMMITTED'"
		db, err = connect(ctx, cfg, maxConns)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1193 { // 1193: unknown system variable
			break
		}
		delete(cfg.Params, name)
	}
	if err != nil {
		return nil, nil, connectError(cfg.FormatDSN(), err)
	}
	if pipeConns <= 0 {
		return db, nil, nil
	}
	multi := cfg.Clone() // the isolation variable the main handle found
	multi.MultiStatements = true
	if pipe, err = pool(multi, pipeConns); err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return db, pipe, nil
}

// pool is a handle on cfg of at most maxConns connections, none opened yet.
func pool(cfg *mysql.Config, maxConns int) (*sqlx.DB, error) {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sqlx.NewDb(sql.OpenDB(conn), "mysql")
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxLifetime(5 * time.Minute)
	return db, nil
}

// connect is pool, checked with a ping.
func connect(ctx context.Context, cfg *mysql.Config, maxConns int) (*sqlx.DB, error) {
	db, err := pool(cfg, maxConns)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

func redact(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(invalid DSN)"
	}
	return fmt.Sprintf("%s(%s)/%s as %q", cfg.Net, cfg.Addr, cfg.DBName, cfg.User)
}

// ServerInfo is what the daemon checks about the server at start.
type ServerInfo struct {
	Version     string `json:"version"`
	MariaDB     bool   `json:"mariadb"`
	SkipLocked  bool   `json:"skip_locked"`
	UTCOffsetS  int    `json:"utc_offset_seconds"` // server default NOW() minus UTC
	DescIndexes bool   `json:"desc_indexes"`
}

// InspectServer reads the version and the server's default time zone. The
// zone is read on a fresh connection without our time_zone setting, because
// PHP's NOW() rows use the server default.
func InspectServer(ctx context.Context, dsn string, logger *slog.Logger) (ServerInfo, error) {
	var info ServerInfo
	cfg, err := prepare(dsn, logger)
	if err != nil {
		return info, err
	}
	delete(cfg.Params, "time_zone")
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return info, err
	}
	raw := sqlx.NewDb(sql.OpenDB(conn), "mysql")
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	if err := raw.GetContext(ctx, &info.Version, "SELECT VERSION()"); err != nil {
		return info, connectError(dsn, err)
	}
	if err := raw.GetContext(ctx, &info.UTCOffsetS, "SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())"); err != nil {
		return info, err
	}
	info.MariaDB, info.SkipLocked, info.DescIndexes = classify(info.Version)
	return info, nil
}

// classify parses VERSION(): SKIP LOCKED needs MariaDB >= 10.6 or MySQL >=
// 8.0.1; descending indexes need MariaDB >= 10.8 or MySQL >= 8.0.
func classify(version string) (mariadb, skipLocked, desc bool) {
	mariadb = strings.Contains(strings.ToLower(version), "mariadb")
	v := version
	// MariaDB 10.x replication builds report "5.5.5-10.11.2-MariaDB".
	v = strings.TrimPrefix(v, "5.5.5-")
	parts := strings.SplitN(strings.SplitN(v, "-", 2)[0], ".", 4)
	num := func(i int) int {
		if i >= len(parts) {
			return 0
		}
		n, _ := strconv.Atoi(parts[i])
		return n
	}
	maj, mnr, patch := num(0), num(1), num(2)
	at := func(a, b, c int) bool {
		if maj != a {
			return maj > a
		}
		if mnr != b {
			return mnr > b
		}
		return patch >= c
	}
	if mariadb {
		return true, at(10, 6, 0), at(10, 8, 0)
	}
	return false, at(8, 0, 1), at(8, 0, 0)
}

// CheckServer turns ServerInfo into the refusal the daemon gives at start.
func (i ServerInfo) CheckServer(allowNonUTC bool) error {
	if !i.SkipLocked {
		return fmt.Errorf("server %s does not support SELECT ... FOR UPDATE SKIP LOCKED, which Queuety's claim needs: use MariaDB >= 10.6 or MySQL >= 8.0.1", i.Version)
	}
	if i.UTCOffsetS != 0 && !allowNonUTC {
		return fmt.Errorf("server default time zone is UTC%+.1fh, but Queuety's PHP side writes NOW() in the server zone and compares it with UTC times: set default_time_zone='+00:00' in the server config (or pass --allow-non-utc if every writer sets its session to UTC)", float64(i.UTCOffsetS)/3600)
	}
	return nil
}

// ServerProcess returns the server's pid file path and host name, for a
// caller on the same machine to find the server's process.
func (s *Store) ServerProcess(ctx context.Context) (pidFile, host string, err error) {
	err = s.db.QueryRowxContext(ctx, s.query(qServerProcess)).Scan(&pidFile, &host)
	return pidFile, host, err
}
