package wpconfig

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Reader names how a wp-config.php was read.
type Reader string

const (
	// ReaderPHP evaluated the file with php-cli, stopping before WordPress
	// loads: getenv(), the official image's getenv_docker(), Bedrock's
	// Config::define() with its .env, and computed values all work.
	ReaderPHP Reader = "php"
	// ReaderLiteral scanned the file for literal define()s (no php on the
	// machine, or Options.NoPHP).
	ReaderLiteral Reader = "literal"
)

// DefaultTimeout bounds how long evaluating a wp-config.php may take. A
// real one finishes in milliseconds; one that loops or waits on the
// network must not hold the daemon's start.
const DefaultTimeout = 5 * time.Second

// Options say how Load reads a wp-config.php.
type Options struct {
	// PHP is the php-cli binary; "" looks up "php" on the PATH and falls
	// back to the literal reader when there is none.
	PHP string
	// NoPHP forces the literal reader.
	NoPHP bool
	// Timeout bounds the php process; 0 means DefaultTimeout.
	Timeout time.Duration
	// HaveDSN says the caller has the database from elsewhere (--dsn):
	// the DB_* constants then need not be defined or readable, and only
	// the table prefix and the QUEUETY_* settings are taken from the file.
	HaveDSN bool
	// Env is the php process's environment; nil means the daemon's own,
	// which is where the official image's WORDPRESS_* variables are.
	Env []string
}

//go:embed read-wp-config.php
var readerScript []byte

// Load reads the wp-config.php at path with php when it is available (see
// ReaderPHP), else with the literal reader. Settings.Reader says which.
// Errors start with path and never contain the value of a secret.
func Load(ctx context.Context, path string, opts Options) (Settings, error) {
	php := opts.PHP
	if php == "" && !opts.NoPHP {
		php, _ = exec.LookPath("php")
	}
	if php == "" || opts.NoPHP {
		src, err := os.ReadFile(path)
		if err != nil {
			return Settings{}, fmt.Errorf("reading wp-config: %w", err)
		}
		s, err := parse(path, src, !opts.HaveDSN)
		s.Reader = ReaderLiteral
		return s, err
	}
	s, err := evaluate(ctx, php, path, opts)
	s.Reader = ReaderPHP
	return s, err
}

// phpResult is what read-wp-config.php writes.
type phpResult struct {
	Finished    bool                `json:"finished"`
	Output      int                 `json:"output"` // bytes the file printed, blank space left out
	Failure     *phpFailure         `json:"failure"`
	Constants   map[string]phpValue `json:"constants"`
	TablePrefix *phpValue           `json:"table_prefix"`
}

// phpFailure is how the file ended php early: "uncaught <class>" or
// "fatal error", and where. PHP's message is left out (it may quote a
// secret), but for an undefined function's.
type phpFailure struct {
	What string `json:"what"`
	File string `json:"file"`
	Line int    `json:"line"`
}

type phpValue struct {
	Type  string          `json:"t"`
	Str   string          `json:"s"` // base64 of PHP's (string) cast
	Array []phpArrayEntry `json:"a"`
}

type phpArrayEntry [2]json.RawMessage // [base64 key, phpValue]

func evaluate(ctx context.Context, php, path string, opts Options) (Settings, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Settings{}, fmt.Errorf("reading wp-config: %w", err)
	}
	src, err := os.ReadFile(abs)
	if err != nil {
		return Settings{}, fmt.Errorf("reading wp-config: %w", err)
	}
	dir, err := os.MkdirTemp("", "queuety-wp-config-")
	if err != nil {
		return Settings{}, fmt.Errorf("reading wp-config: %w", err)
	}
	defer os.RemoveAll(dir)
	script, result := filepath.Join(dir, "read-wp-config.php"), filepath.Join(dir, "result.json")
	if err := os.WriteFile(script, readerScript, 0o600); err != nil {
		return Settings{}, fmt.Errorf("reading wp-config: %w", err)
	}
	// ABSPATH points at dir: the file's closing require of wp-settings.php
	// loads this empty one instead of WordPress.
	if err := os.WriteFile(filepath.Join(dir, "wp-settings.php"), nil, 0o600); err != nil {
		return Settings{}, fmt.Errorf("reading wp-config: %w", err)
	}

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, php,
		"-d", "display_errors=0", "-d", "log_errors=0", "-d", "html_errors=0",
		// No network and no programs: the file is read, not served.
		"-d", "allow_url_fopen=0", "-d", "allow_url_include=0",
		"-d", "disable_functions="+disabledFunctions,
		"-d", "max_execution_time="+strconv.Itoa(int(timeout/time.Second)+1),
		// php-cli has no memory limit by default; a wp-config needs little.
		"-d", "memory_limit=128M",
		script, abs, result)
	cmd.Dir = filepath.Dir(abs) // as when WordPress serves the site
	cmd.Env = opts.Env
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limited{&stdout, 4096}, io.Discard
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return Settings{}, fmt.Errorf("%s: php did not finish reading the file within %s (does it loop, sleep or wait on the network?)%s", path, timeout, hint)
	}
	if ctx.Err() != nil {
		return Settings{}, fmt.Errorf("%s: reading with php: %w", path, ctx.Err())
	}
	raw, err := os.ReadFile(result)
	if err != nil {
		// What php wrote to stderr is not shown: the file may have written
		// there too.
		return Settings{}, fmt.Errorf("%s: php (%s) gave no result (%v; is it php-cli 8?)%s", path, php, runErr, hint)
	}
	var r phpResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return Settings{}, fmt.Errorf("%s: reading php's result: %w", path, err)
	}
	switch {
	case r.Failure != nil:
		return Settings{}, fmt.Errorf("%s: php stopped: %s at %s:%d (PHP's message is not shown: it may quote a secret)%s",
			path, r.Failure.What, r.Failure.File, r.Failure.Line, hint)
	case !r.Finished:
		return Settings{}, fmt.Errorf("%s: the file ended php (exit or die) before it finished%s", path, hint)
	case r.Output > 0 || len(bytes.TrimSpace(stdout.Bytes())) > 0:
		// The printed text itself is not shown: it may hold a secret.
		return Settings{}, fmt.Errorf("%s: the file printed output when read (%d bytes); a wp-config.php prints nothing%s",
			path, max(r.Output, len(bytes.TrimSpace(stdout.Bytes()))), hint)
	}
	return settingsFrom(path, src, r, !opts.HaveDSN)
}

// disabledFunctions are refused to the evaluated file: network, programs,
// mail, and a web response.
const disabledFunctions = "exec,shell_exec,system,passthru,proc_open,popen,pcntl_exec,pcntl_fork," +
	"fsockopen,pfsockopen,stream_socket_client,stream_socket_server,socket_create,socket_connect," +
	"curl_init,curl_exec,curl_multi_exec,mail,mysqli_connect,mysqli_real_connect,mysqli_init," +
	"gethostbyname,gethostbynamel,dns_get_record,header,setcookie,session_start,posix_kill,pcntl_signal"

func settingsFrom(path string, src []byte, r phpResult, needDB bool) (Settings, error) {
	lines := scan(src) // where each constant is defined in this file, for messages
	e := &evaluator{name: path, src: src}
	s := Settings{TablePrefix: "wp_", Defines: map[string]string{}, Constants: map[string]Constant{}}
	for name, v := range r.Constants {
		c, ok := v.constant()
		if !ok {
			continue
		}
		if b, ok := lines.consts[name]; ok {
			c.Line = e.line(b.at)
		}
		s.Constants[name] = c
		if c.Kind != ConstArray {
			s.Defines[name] = c.Text
		}
	}
	for _, f := range s.dbFields() {
		c, ok := s.Constants[f.name]
		switch {
		case !ok && f.required && needDB:
			return Settings{}, fmt.Errorf("%s: %s is not defined when the file is run%s", path, f.name, hint)
		case ok && c.Kind != ConstString && c.Kind != ConstInt && needDB:
			// getenv() of an unset variable is false. The value is not shown.
			return Settings{}, fmt.Errorf("%s: %s is %s when the file is run, not a string (an environment variable not set?)%s",
				path, f.name, kindName(c.Kind), hint)
		case ok:
			*f.dst = c.Text
		}
	}
	s.DBCharset = s.Defines["DB_CHARSET"]
	if v, ok := s.Defines["QUEUETY_TABLE_PREFIX"]; ok {
		s.QueuetyTablePrefix = &v
	}
	if r.TablePrefix != nil {
		c, ok := r.TablePrefix.constant()
		if !ok || c.Kind != ConstString {
			return Settings{}, fmt.Errorf("%s: $table_prefix is not a string when the file is run", path)
		}
		if err := checkPrefix(path, 0, c.Text); err != nil {
			return Settings{}, err
		}
		s.TablePrefix = c.Text
	}
	return s, nil
}

func kindName(k ConstKind) string {
	switch k {
	case ConstFloat:
		return "a float"
	case ConstBool:
		return "a boolean"
	case ConstNull:
		return "null"
	case ConstArray:
		return "an array"
	}
	return "a string"
}

func (v phpValue) constant() (Constant, bool) {
	if v.Type == "array" {
		c := Constant{Kind: ConstArray}
		for _, e := range v.Array {
			var key string
			var val phpValue
			if json.Unmarshal(e[0], &key) != nil || json.Unmarshal(e[1], &val) != nil {
				return Constant{}, false
			}
			k, err := base64.StdEncoding.DecodeString(key)
			if err != nil {
				return Constant{}, false
			}
			ev, ok := val.constant()
			if !ok || ev.Kind == ConstArray {
				return Constant{}, false
			}
			c.Array = append(c.Array, ArrayEntry{Key: string(k), Value: ev})
		}
		return c, true
	}
	text, err := base64.StdEncoding.DecodeString(v.Str)
	if err != nil {
		return Constant{}, false
	}
	c := Constant{Text: string(text)}
	switch v.Type {
	case "string":
		c.Kind = ConstString
	case "integer":
		c.Kind = ConstInt
	case "double":
		c.Kind = ConstFloat
	case "boolean":
		c.Kind = ConstBool
	case "NULL":
		c.Kind = ConstNull
	default:
		return Constant{}, false
	}
	return c, true
}

// limited keeps the first n bytes written and discards the rest, so a file
// that prints without end cannot fill the daemon's memory.
type limited struct {
	buf *bytes.Buffer
	n   int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
