// Package deploy_test proves the release as it is installed: the .deb in a
// scratch root, the OCI image, and the PHP bridge as a Composer package.
// The tests share one run of scripts/release.sh for the host's
// architecture (a cold build of the static binary takes most of a minute).
package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"
)

// released is the one release run of this test process.
type released struct {
	dist    string // its dist/
	version string // VERSION it was given
	deb     string // the host architecture's .deb
	binary  string // the host architecture's static binary
	image   string // localhost/queuety:<version>-<arch>
	err     error
}

var (
	releaseOnce sync.Once
	release     released
)

// stripped is the PATH the installed programs run with: the system's
// directories only, none of which holds Go (asserted by requireNoGo).
const stripped = "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

func TestMain(m *testing.M) {
	code := m.Run()
	if release.dist != "" {
		_ = os.RemoveAll(release.dist)
	}
	if release.image != "" {
		// The manifest list first: it holds the image.
		_ = exec.Command("buildah", "manifest", "rm", "localhost/queuety:"+release.version).Run()
		_ = exec.Command("buildah", "rmi", release.image).Run()
	}
	os.Exit(code)
}

// releaseForHost runs scripts/release.sh once, for the host's architecture
// with the image, under a version of its own (so a concurrent run of these
// tests tags other images).
func releaseForHost(t *testing.T) released {
	t.Helper()
	releaseOnce.Do(func() {
		dist, err := os.MkdirTemp("", "queuety-dist-")
		if err != nil {
			release.err = err
			return
		}
		version := fmt.Sprintf("v0.0.0-test.%d", os.Getpid())
		release = released{dist: dist, version: version, image: "localhost/queuety:" + version + "-" + runtime.GOARCH}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join("..", "scripts", "release.sh"))
		cmd.Env = append(os.Environ(), "VERSION="+version, "DIST="+dist, "ARCHES="+runtime.GOARCH, "IMAGE=1",
			"DEB_COMPRESSION=gzip") // xz alone would double the run's CPU time
		if out, err := cmd.CombinedOutput(); err != nil {
			release.err = fmt.Errorf("scripts/release.sh: %w\n%s", err, out)
			return
		}
		release.deb = filepath.Join(dist, fmt.Sprintf("queuety_0.0.0~test.%d_%s.deb", os.Getpid(), runtime.GOARCH))
		release.binary = filepath.Join(dist, fmt.Sprintf("queuety_%s_linux_%s", version, runtime.GOARCH))
	})
	require.NoError(t, release.err)
	return release
}

// run runs a command with PATH stripped of Go and nothing else from the
// test's environment, and returns its combined output.
func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	out, err := runErr(t, dir, name, args...)
	require.NoError(t, err, "%s %s\n%s", name, strings.Join(args, " "), out)
	return out
}

// runEnv is run with more environment variables.
func runEnv(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := runErrEnv(t, dir, env, name, args...)
	require.NoError(t, err, "%s %s\n%s", name, strings.Join(args, " "), out)
	return out
}

func runErr(t *testing.T, dir string, name string, args ...string) (string, error) {
	t.Helper()
	return runErrEnv(t, dir, nil, name, args...)
}

func runErrEnv(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{stripped, "HOME=" + t.TempDir(), "LANG=C.UTF-8"}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// requireNoGo: the stripped PATH finds no go, so nothing below can build.
func requireNoGo(t *testing.T) {
	t.Helper()
	out, err := runErr(t, "", "/bin/sh", "-c", "command -v go")
	require.Error(t, err, "go is on the stripped PATH: %s", out)
}

// dbParts splits a test database's DSN into what PHP's Connection takes.
func dbParts(t *testing.T, dsn string) *mysql.Config {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	return cfg
}

// phpString quotes s for a PHP single-quoted string.
func phpString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// statuses returns the status of every row of a table, by id.
func statuses(t *testing.T, dsn, table string) []string {
	t.Helper()
	db, err := sqlx.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	var out []string
	require.NoError(t, db.Select(&out, "SELECT status FROM "+table+" ORDER BY id"))
	return out
}
