// Package cli is the `queuety` command line. The stock binary in
// cmd/queuety runs it with the built-in handlers; an application builds its
// own binary with its Go handlers registered:
//
//	reg := queuety.NewRegistry()
//	reg.HandleFunc("send_email", sendEmail)
//	os.Exit(cli.Main(os.Args, cli.Options{Registry: reg}))
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitError    = 1 // the command failed (database, job state)
	ExitUsage    = 2 // bad flags or arguments
	ExitNotFound = 3 // the job, workflow, session or state machine named does not exist
)

// Options customise the app.
type Options struct {
	// Registry holds the Go handlers `work` runs; the built-ins are added.
	Registry *queuety.Registry
	Stdout   io.Writer
	Stderr   io.Writer
	// Stdin answers the confirmation prompts of purge, job retry-buried
	// and job delete (default os.Stdin; only a terminal is asked).
	Stdin io.Reader
}

// usageError marks errors that deserve ExitUsage.
type usageError struct{ error }

func usagef(format string, a ...any) error {
	for i, x := range a {
		if s, ok := x.(string); ok && len(s) > maxEchoBytes {
			a[i] = clipArg(s)
		}
	}
	return usageError{fmt.Errorf(format, a...)}
}

// maxEchoBytes is the most of an argument a usage error repeats: a flag
// value of 80 KB (a 10,000-deep JSON --state) must not come back whole on
// the terminal or in the journal (N20).
const maxEchoBytes = 120

// clipArg is the start of a long argument, marked with its full size.
func clipArg(s string) string {
	cut := maxEchoBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// jsonWhy is the reason a JSON flag value was refused: the decoder's
// error, or that it is not an object.
func jsonWhy(err error) string {
	if err != nil {
		return ": " + err.Error()
	}
	return ""
}

// Main runs the app and returns the process exit code.
func Main(args []string, opts Options) int {
	phpSecondsEnv()
	gcTarget()
	app := New(opts)
	if len(args) == 0 || args[len(args)-1] != "--generate-bash-completion" {
		args = normalizeArgs(app, args) // completion needs its flag last, as typed
	}
	app.Metadata = map[string]any{argsKey: args} // logSettings tells flags from the environment
	err := app.Run(args)
	if err == nil {
		return ExitOK
	}
	err = withHint(err)
	fmt.Fprintln(app.ErrWriter, "queuety:", err)
	var ue usageError
	var ns noStateError
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &ns):
		return ExitNotFound
	case errors.Is(err, store.ErrJobNotFound), errors.Is(err, store.ErrWorkflowNotFound),
		errors.Is(err, sessions.ErrSessionNotFound), errors.Is(err, store.ErrScheduleNotFound),
		errors.Is(err, store.ErrWebhookNotFound), errors.Is(err, store.ErrMachineNotFound),
		errors.Is(err, store.ErrArtifactNotFound):
		return ExitNotFound
	}
	return ExitError
}

// withHint adds the fix to a server error every command may meet, so
// status, dispatch, workflow list and the others say what `work` says
// about an unmigrated database instead of a bare Error 1146.
func withHint(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1146 { // table doesn't exist
		return fmt.Errorf("%w: run `queuety migrate` (or check --prefix / QUEUETY_TABLE_PREFIX)", err)
	}
	return err
}

// New builds the urfave/cli app.
func New(opts Options) *cli.App {
	if opts.Registry == nil {
		opts.Registry = queuety.NewRegistry()
	}
	builtins.Register(opts.Registry)
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	stdin := stdinOr(opts.Stdin)
	a := &app{reg: opts.Registry, stdin: stdin, tty: interactive(stdin)}
	onUsage := func(c *cli.Context, err error, _ bool) error { return usageError{err} }
	cliApp := &cli.App{
		Name:  "queuety",
		Usage: "run Queuety jobs from the MySQL tables PHP writes, fast",
		// --version (and -v) print it, as `queuety version` does in full.
		Version:   ReadBuildInfo().Version,
		Writer:    opts.Stdout,
		ErrWriter: opts.Stderr,
		Flags:     globalFlags(),
		// Errors are printed once, by Main, with the right exit code.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsage,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown command %q (see queuety --help)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			a.workCommand(), a.flushCommand(), a.healthCommand(), a.devCommand(), a.migrateCommand(), a.dispatchCommand(),
			a.recoverCommand(), a.pauseCommand(true), a.pauseCommand(false), a.statusCommand(),
			a.jobCommand(), a.purgeCommand(), a.benchCommand(),
			a.workflowCommand(), a.sessionCommand(), a.workerCommand(), a.serveCommand(),
			a.activitiesCommand(), a.scheduleCommand(), a.versionCommand(), a.completionCommand(),
			a.webhookCommand(), a.logCommand(), a.metricsCommand(), a.machineCommand(), a.discoverCommand(),
		},
		HideHelpCommand:      true,
		EnableBashCompletion: true,
		Description: `Point it at the database of a WordPress site running the Queuety plugin
(--wp-config /var/www/wp-config.php) or at any MySQL/MariaDB DSN:

   queuety migrate --dsn 'root@tcp(127.0.0.1:3306)/site'
   queuety work --queue critical,default --concurrency 50
   queuety dispatch queuety.noop --payload '{"n":1}'
   queuety status --json

Every flag can also be set by the environment variable shown in its help.`,
	}
	// A bad flag of any command is a usage error (exit 2), not just the
	// app's own flags.
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			cmd.OnUsageError = onUsage
			walk(cmd.Subcommands)
		}
	}
	cliApp.Commands = append(cliApp.Commands, a.pluginAliasCommands()...)
	walk(cliApp.Commands)
	topicsAndEnv(cliApp.Commands)
	return cliApp
}

// phpSecondsEnv accepts Queuety's own constants where we read them from the
// environment: PHP gives QUEUETY_STALE_TIMEOUT and QUEUETY_MAX_EXECUTION_TIME
// in whole seconds ("600"), while our duration flags want "600s" or "10m".
func phpSecondsEnv() {
	for _, name := range []string{"QUEUETY_STALE_TIMEOUT", "QUEUETY_MAX_EXECUTION_TIME", "QUEUETY_SHUTDOWN_GRACE"} {
		v := os.Getenv(name)
		if v != "" && strings.Trim(v, "0123456789") == "" {
			_ = os.Setenv(name, v+"s")
		}
	}
}

// daemonGOGC is the daemon's GC target when GOGC is not set. Its live
// heap is small (tens of MiB), so Go's default of 100 collects often:
// about a quarter of the daemon's CPU went to the collector in
// `bench php-workflows`. At 200 the daemon spent 10% less CPU a step, for
// about 15 MiB more RSS (docs/compat.md, Performance notes).
const daemonGOGC = 200

// daemonMemoryLimit is the daemon's soft memory limit when GOMEMLIMIT is
// not set. daemonGOGC lets the heap grow to three times what is live,
// which is cheap for the usual tens of MiB but not for a step that holds
// a large state: a for_each over 1,000,000 items keeps about 80 MiB live
// while it plans, and the daemon peaked at 400 MiB. Past this limit the
// collector runs as often as it must (the runtime caps it at half the
// CPU) instead; below it nothing changes.
const daemonMemoryLimit = 160 << 20

// gcTarget sets daemonGOGC and daemonMemoryLimit, each unless the
// environment chose (GOGC, or GOMEMLIMIT with GOGC=off; GOMEMLIMIT).
func gcTarget() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(daemonGOGC)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(daemonMemoryLimit)
	}
}

// normalizeArgs lets flags stand anywhere, as users type them: urfave/cli
// v2 takes global flags only before the command and a command's flags only
// before its first argument. Global flags move to the front, and each
// command's flags before its positional arguments; "--" ends flag parsing.
func normalizeArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	takesValue := map[string]bool{}
	isGlobal := map[string]bool{}
	note := func(flags []cli.Flag, global bool) {
		for _, f := range flags {
			_, isBool := f.(*cli.BoolFlag)
			for _, n := range f.Names() {
				takesValue[n] = !isBool
				if global {
					isGlobal[n] = true
				}
			}
		}
	}
	note(app.Flags, true)
	var globals, path, flags, positional []string
	cmds := app.Commands
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			name := strings.TrimLeft(a, "-")
			name, _, hasValue := strings.Cut(name, "=")
			group := &flags
			if isGlobal[name] {
				group = &globals
			}
			if hasValue {
				flag, value, _ := strings.Cut(a, "=")
				a = flag + "=" + plainSeconds(name, value)
			}
			*group = append(*group, a)
			if takesValue[name] && !hasValue && i+1 < len(args) {
				i++
				*group = append(*group, plainSeconds(name, args[i]))
			}
			continue
		}
		if len(positional) == 0 {
			if cmd := findCommand(cmds, a); cmd != nil {
				path = append(path, a)
				note(cmd.Flags, false)
				cmds = cmd.Subcommands
				continue
			}
		}
		positional = append(positional, a)
	}
	out := append([]string{args[0]}, globals...)
	out = append(out, path...)
	out = append(out, flags...)
	return append(out, positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

type app struct {
	reg   *queuety.Registry
	stdin io.Reader
	tty   bool // stdin is a terminal: destructive commands may ask
}

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "dsn", EnvVars: []string{"QUEUETY_DSN"}, Usage: "MySQL DSN, e.g. 'user:pass@tcp(127.0.0.1:3306)/wordpress'"},
		&cli.StringFlag{Name: "wp-config", EnvVars: []string{"QUEUETY_WP_CONFIG"}, Usage: "read DB_*, $table_prefix and the QUEUETY_* settings from this `wp-config.php` (run by php-cli when there is one, stopping before WordPress loads); with --dsn, the database comes from --dsn"},
		&cli.StringFlag{Name: "prefix", EnvVars: []string{"QUEUETY_DB_PREFIX"}, DefaultText: "\"wp_\", or wp-config's $table_prefix", Usage: "WordPress table prefix; an empty one means none, as in PHP"},
		&cli.StringFlag{Name: "table-prefix", EnvVars: []string{"QUEUETY_TABLE_PREFIX"}, DefaultText: "\"queuety_\"", Usage: "Queuety's own table prefix, as the QUEUETY_TABLE_PREFIX constant; blank means none"},
		&cli.BoolFlag{Name: "allow-non-utc", EnvVars: []string{"QUEUETY_ALLOW_NON_UTC"}, Usage: "start even when the server's default time zone is not UTC"},
		&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{"QUEUETY_LOG_LEVEL"}, Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: "text", EnvVars: []string{"QUEUETY_LOG_FORMAT"}, Usage: "text or json"},
	}
}

// baseConfig builds the database part of the Config from global flags.
func baseConfig(c *cli.Context) (queuety.Config, error) {
	var cfg queuety.Config
	logger, err := newLogger(c)
	if err != nil {
		return cfg, err
	}
	cfg.Logger = logger
	cfg.DSN = c.String("dsn")
	cfg.AllowNonUTC = c.Bool("allow-non-utc")
	s, err := readWPConfig(c)
	if err != nil {
		return cfg, err
	}
	if s != nil {
		logger.Debug("wp-config read", "path", c.String("wp-config"), "reader", string(s.Reader))
		if cfg.DSN == "" {
			if cfg.DSN, err = s.DSN(""); err != nil {
				return cfg, usageError{fmt.Errorf("--wp-config: %w", err)}
			}
		}
		setTablePrefix(&cfg, s.TablePrefix)
		cfg.QueuetyTablePrefix = s.QueuetyTablePrefix
		cfg.TableOverrides = tableOverrides(s.Defines)
	}
	if c.IsSet("prefix") {
		setTablePrefix(&cfg, c.String("prefix"))
	}
	if c.IsSet("table-prefix") {
		v := c.String("table-prefix")
		cfg.QueuetyTablePrefix = &v
	}
	for _, suffix := range store.TableSuffixes() {
		env := "QUEUETY_TABLE_" + strings.ToUpper(suffix)
		if v, ok := os.LookupEnv(env); ok {
			if cfg.TableOverrides == nil {
				cfg.TableOverrides = map[string]string{}
			}
			cfg.TableOverrides[suffix] = v
		}
	}
	return cfg, nil
}

// setTablePrefix applies a WordPress prefix someone set: an explicitly
// empty one (an empty string in wp-config's $table_prefix, in --prefix or
// in QUEUETY_DB_PREFIX) means no prefix, as in PHP, which names the tables
// $wpdb->prefix . 'queuety_jobs'. Only an unset prefix means "wp_".
func setTablePrefix(cfg *queuety.Config, prefix string) {
	cfg.TablePrefix, cfg.NoTablePrefix = prefix, prefix == ""
}

// tableOverrides picks QUEUETY_TABLE_<SUFFIX> defines out of wp-config.
func tableOverrides(defines map[string]string) map[string]string {
	var m map[string]string
	for _, suffix := range store.TableSuffixes() {
		if v, ok := defines["QUEUETY_TABLE_"+strings.ToUpper(suffix)]; ok {
			if m == nil {
				m = map[string]string{}
			}
			m[suffix] = v
		}
	}
	return m
}

func newLogger(c *cli.Context) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, usagef("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.String("log-format") {
	case "text":
		return slog.New(slog.NewTextHandler(c.App.ErrWriter, opts)), nil
	case "json":
		opts.ReplaceAttr = durationsInMS
		return slog.New(slog.NewJSONHandler(c.App.ErrWriter, opts)), nil
	}
	return nil, usagef("--log-format %q: want text or json", c.String("log-format"))
}

// durationsInMS is the JSON log format's ReplaceAttr: a time.Duration
// attribute ("grace": 30s) becomes a number of milliseconds with the unit
// in its key ("grace_ms": 30000), which log pipelines can sum and compare;
// slog's JSON handler would write nanoseconds under the bare key.
func durationsInMS(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	d := a.Value.Duration()
	ms := float64(d) / float64(time.Millisecond)
	if d%time.Millisecond == 0 {
		return slog.Int64(a.Key+"_ms", d.Milliseconds())
	}
	return slog.Float64(a.Key+"_ms", ms)
}

// open connects with cfg (already carrying command flags).
func open(c *cli.Context, cfg queuety.Config) (*queuety.Client, error) {
	client, err := queuety.Open(c.Context, cfg)
	if err != nil {
		var ce *queuety.ConfigError
		if errors.As(err, &ce) {
			return nil, usageError{err}
		}
		return nil, err
	}
	return client, nil
}

// startupWaitFlag is how long work and serve wait for the database at
// start.
func startupWaitFlag() cli.Flag {
	return &cli.DurationFlag{Name: "startup-wait", Value: queuety.DefaultStartupWait, EnvVars: []string{"QUEUETY_STARTUP_WAIT"},
		Usage: "at start, retry a database that refuses or cuts the connection for this long, with backoff, before exiting (work --max-time bounds it too; 0: exit at the first failure)"}
}

func startupWait(c *cli.Context) (time.Duration, error) {
	d := c.Duration("startup-wait")
	if d < 0 {
		return 0, usagef("--startup-wait %s: must not be negative (0: exit at the first failure)", d)
	}
	return d, nil
}

// openWaiting is open for the daemons: an unreachable database (down,
// refusing, cutting the connection) is retried with backoff for wait,
// each attempt logged, and the schema is checked on the way (an
// unmigrated database fails at once with the fix).
func openWaiting(c *cli.Context, cfg queuety.Config, wait time.Duration) (*queuety.Client, error) {
	client, err := queuety.OpenRetrying(c.Context, cfg, queuety.StartupRetry{For: wait},
		func(ctx context.Context, cl *queuety.Client) error { return clientstore.Of(cl).CheckSchema(ctx) })
	if err != nil {
		var ce *queuety.ConfigError
		if errors.As(err, &ce) {
			return nil, usageError{err}
		}
		return nil, err
	}
	return client, nil
}

// withClient is the action of an admin command: connect, run fn, close.
// check, when set, validates arguments first, so bad input fails before
// any connection is made.
func withClient(check func(*cli.Context) error, fn func(c *cli.Context, client *queuety.Client) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if check != nil {
			if err := check(c); err != nil {
				return err
			}
		}
		client, err := connect(c)
		if err != nil {
			return err
		}
		defer client.Close()
		return fn(c, client)
	}
}

// connect is baseConfig (or the site --site names) + open for the admin
// commands.
func connect(c *cli.Context) (*queuety.Client, error) {
	cfg, err := commandConfig(c)
	if err != nil {
		return nil, err
	}
	return open(c, cfg)
}

// jsonFlag is a new flag each time: urfave/cli flags hold parse state, so
// commands must not share one.
func jsonFlag() cli.Flag { return &cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"} }

func printJSON(c *cli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func argID(c *cli.Context) (int64, error) {
	if c.NArg() != 1 {
		return 0, usagef("%s takes one job id", c.Command.FullName())
	}
	var id int64
	if _, err := fmt.Sscanf(c.Args().First(), "%d", &id); err != nil || id < 1 || fmt.Sprint(id) != c.Args().First() {
		return 0, usagef("%q is not a job id", c.Args().First())
	}
	return id, nil
}
