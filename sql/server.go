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
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("invalid DSN: %w", errors.Unwrap(err))
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
	cfg, err := prepare(dsn, logger)
	if err != nil {
		return nil, err
	}
	// Every transaction of ours runs READ COMMITTED (no gap locks, so
	// concurrent claims and step transactions do not deadlock on
	// index gaps). Setting it per session, not per transaction, saves a
	// round trip per transaction. MySQL 8 and MariaDB 11.1+ name the
	// variable transaction_isolation, older MariaDB only tx_isolation.
	var db *sqlx.DB
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
		return nil, fmt.Errorf("cannot reach MySQL at %s: %w", redact(cfg.FormatDSN()), err)
	}
	return db, nil
}

func connect(ctx context.Context, cfg *mysql.Config, maxConns int) (*sqlx.DB, error) {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sqlx.NewDb(sql.OpenDB(conn), "mysql")
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxLifetime(5 * time.Minute)
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
		return info, fmt.Errorf("cannot reach MySQL at %s: %w", redact(dsn), err)
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
