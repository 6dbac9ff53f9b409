package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// scratchRoot is an empty root with what dpkg and the package's
// maintainer script expect of a Debian system: dpkg's database and the
// account files (root only).
func scratchRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "etc"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	for name, body := range map[string]string{
		"var/lib/dpkg/status":    "",
		"var/lib/dpkg/available": "",
		"etc/passwd":             "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":              "root:x:0:\n",
		"etc/shadow":             "root:*:20000:0:99999:7:::\n",
		"etc/gshadow":            "root:*::\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(body), 0o640))
	}
	return root
}

// dpkgInstall installs the .deb into root with dpkg itself, its maintainer
// scripts run outside a chroot with DPKG_ROOT=root (the root has no shell
// to chroot into). Depends: passwd is forced: the scratch root's dpkg
// database lists nothing.
func dpkgInstall(t *testing.T, root, deb string) {
	t.Helper()
	run(t, "", "dpkg", "--root="+root, "--force-script-chrootless", "--force-depends",
		"--log=/dev/null", "--no-triggers", "-i", deb)
}

// TestInstallDeb installs the release's .deb into a scratch root, twice
// (an upgrade in place: postinst must find its user), and checks what it
// installed: the binary, the units (verified against the installed
// paths), /etc/queuety as conffiles readable by the queuety group only,
// the bridge's worker script and classes, the completions, one queuety
// system user. Then, from the installed paths with a PATH that has no Go,
// the README's first steps on a WordPress-shaped site: `queuety version`,
// `migrate --wp-config`, a job dispatched the plugin's way (a
// Queuety\Handler class), and `work --once` serving it with the installed
// queuety-php-worker loading the site's wp-load.php.
func TestInstallDeb(t *testing.T) {
	t.Parallel()
	rel := releaseForHost(t)
	dsn := testdb.New(t)
	root := scratchRoot(t)
	requireNoGo(t)

	dpkgInstall(t, root, rel.deb)
	dpkgInstall(t, root, rel.deb)

	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	require.NoError(t, err)
	users := regexp.MustCompile(`(?m)^queuety:x:(\d+):(\d+):[^:]*:/nonexistent:/usr/sbin/nologin$`).FindAllStringSubmatch(string(passwd), -1)
	require.Len(t, users, 1, string(passwd))
	uid, err := strconv.Atoi(users[0][1])
	require.NoError(t, err)
	require.Less(t, uid, 1000, "a system user")
	group, err := os.ReadFile(filepath.Join(root, "etc/group"))
	require.NoError(t, err)
	require.Len(t, regexp.MustCompile(`(?m)^queuety:x:`+users[0][2]+`:$`).FindAllString(string(group), -1), 1, string(group))
	gid, err := strconv.Atoi(users[0][2])
	require.NoError(t, err)

	for path, mode := range map[string]os.FileMode{
		"etc/queuety":                                         os.ModeDir | 0o750,
		"etc/queuety/queuety.env":                             0o640,
		"etc/queuety/site.env.example":                        0o644,
		"usr/bin/queuety":                                     0o755,
		"usr/lib/systemd/system/queuety.service":              0o644,
		"usr/lib/systemd/system/queuety@.service":             0o644,
		"usr/share/queuety/php-bridge/bin/queuety-php-worker": 0o755,
		"usr/share/queuety/php-bridge/autoload.php":           0o644,
		"usr/share/queuety/php-bridge/src/Queuety.php":        0o644,
		"usr/share/doc/queuety/copyright":                     0o644,
		"usr/share/bash-completion/completions/queuety":       0o644,
		"usr/share/zsh/vendor-completions/_queuety":           0o644,
		"usr/share/fish/vendor_completions.d/queuety.fish":    0o644,
	} {
		fi, err := os.Stat(filepath.Join(root, path))
		require.NoError(t, err, path)
		require.Equal(t, mode, fi.Mode(), path)
	}
	for _, path := range []string{"etc/queuety", "etc/queuety/queuety.env"} {
		fi, err := os.Stat(filepath.Join(root, path))
		require.NoError(t, err)
		require.EqualValues(t, gid, statGID(t, fi), "%s belongs to the queuety group", path)
	}
	status, err := os.ReadFile(filepath.Join(root, "var/lib/dpkg/status"))
	require.NoError(t, err)
	require.Contains(t, string(status), "Status: install ok installed")
	require.Regexp(t, `(?m)^ /etc/queuety/queuety\.env [0-9a-f]{32}$`, string(status), "a conffile")
	require.Regexp(t, `(?m)^ /etc/queuety/site\.env\.example [0-9a-f]{32}$`, string(status), "a conffile")
	_, err = os.Stat(filepath.Join(root, "usr/share/queuety/php-bridge/tests"))
	require.ErrorIs(t, err, os.ErrNotExist, "the bridge's tests are not shipped")

	// The installed units name the installed binary and settings: verified
	// with every absolute path moved under the scratch root.
	for _, unit := range []string{"queuety.service", "queuety@.service"} {
		body, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system", unit))
		require.NoError(t, err)
		text := strings.NewReplacer("/usr/bin/queuety", filepath.Join(root, "usr/bin/queuety"),
			"/etc/queuety/%i.env", filepath.Join(root, "etc/queuety/site.env.example"),
			"/etc/queuety/", filepath.Join(root, "etc/queuety")+"/").Replace(string(body))
		path := filepath.Join(t.TempDir(), strings.Replace(unit, "@.", "@blog.", 1))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		require.Empty(t, run(t, "", "systemd-analyze", "verify", path), unit)
	}

	bin := filepath.Join(root, "usr/bin/queuety")
	require.Contains(t, run(t, "", bin, "version"), "queuety "+rel.version+"\n")
	require.Equal(t, "queuety version "+rel.version+"\n", run(t, "", bin, "--version"))

	// The site, as README's steps meet it: a wp-config.php (literal
	// defines, WordPress's closing lines) and a wp-load.php standing in for
	// WordPress with the plugin active: the plugin's classes (the installed
	// bridge's here) and a handler class as the plugin's are written.
	site := t.TempDir()
	marker := filepath.Join(site, "ran")
	bridge := filepath.Join(root, "usr/share/queuety/php-bridge")
	db := dbParts(t, dsn)
	wpConfig := filepath.Join(site, "wp-config.php")
	require.NoError(t, os.WriteFile(wpConfig, []byte(`<?php
define( 'DB_NAME', `+phpString(db.DBName)+` );
define( 'DB_USER', `+phpString(db.User)+` );
define( 'DB_PASSWORD', `+phpString(db.Passwd)+` );
define( 'DB_HOST', `+phpString(db.Addr)+` );
$table_prefix = 'wp_';
if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}
require_once ABSPATH . 'wp-settings.php';
`), 0o644))
	wpLoad := filepath.Join(site, "wp-load.php")
	require.NoError(t, os.WriteFile(wpLoad, []byte(`<?php
require_once `+phpString(filepath.Join(bridge, "autoload.php"))+`;
Queuety\Queuety::init(Queuety\Connection::from_wp_config(__DIR__ . '/wp-config.php'));

final class InstallCheck implements Queuety\Handler
{
    public function handle(array $payload): void
    {
        file_put_contents(`+phpString(marker)+`, json_encode($payload) . "\n", FILE_APPEND);
    }

    public function config(): array
    {
        return [];
    }
}
`), 0o644))

	// README step 1, the plugin's dispatch, README step 2.
	run(t, site, bin, "migrate", "--wp-config", wpConfig)
	run(t, site, "php", "-r", `require 'wp-load.php'; echo Queuety\Queuety::dispatch(InstallCheck::class, ['order' => 42])->id(), "\n";`)
	out := run(t, site, bin, "work", "--wp-config", wpConfig, "--queue", "critical,default", "--once",
		"--php", "php "+filepath.Join(bridge, "bin/queuety-php-worker")+" --wp-load "+wpLoad, "--php-workers", "1")
	ran, err := os.ReadFile(marker)
	require.NoError(t, err, out)
	require.Equal(t, "{\"order\":42}\n", string(ran), "the handler ran once")
	require.Equal(t, []string{"completed"}, statuses(t, dsn, "wp_queuety_jobs"), out)
}

func statGID(t *testing.T, fi os.FileInfo) uint32 {
	t.Helper()
	st, ok := fi.Sys().(*syscall.Stat_t)
	require.True(t, ok)
	return st.Gid
}
