package wpconfig

import (
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

func TestParseHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Host
		err  string
	}{
		{in: "localhost", want: Host{Host: "localhost"}},
		{in: "db.example.com", want: Host{Host: "db.example.com"}},
		{in: "db.example.com:3307", want: Host{Host: "db.example.com", Port: 3307}},
		{in: " 127.0.0.1:3306 ", want: Host{Host: "127.0.0.1", Port: 3306}},
		{in: "mysql_1", want: Host{Host: "mysql_1"}},
		{in: "localhost:/var/run/mysqld/mysqld.sock", want: Host{Host: "localhost", Socket: "/var/run/mysqld/mysqld.sock"}},
		{in: "localhost:3306:/tmp/mysql.sock", want: Host{Host: "localhost", Port: 3306, Socket: "/tmp/mysql.sock"}},
		{in: ":/tmp/mysql.sock", want: Host{Socket: "/tmp/mysql.sock"}},
		{in: "/tmp/mysql.sock", want: Host{Socket: "/tmp/mysql.sock"}},
		{in: "[::1]:3306", want: Host{Host: "::1", Port: 3306, IPv6: true}},
		{in: "[::1]", want: Host{Host: "::1", IPv6: true}},
		{in: "::1", want: Host{Host: "::1", IPv6: true}},
		{in: "2001:db8::7", want: Host{Host: "2001:db8::7", IPv6: true}},
		{in: "[fe80::1%eth0]:3307", want: Host{Host: "fe80::1%eth0", Port: 3307, IPv6: true}},
		{in: "[2001:db8::7]:/run/my.sock", want: Host{Host: "2001:db8::7", Socket: "/run/my.sock", IPv6: true}},

		{in: "", err: `DB_HOST "": no host or socket`},
		{in: ":3306", err: `DB_HOST ":3306": no host or socket`},
		{in: "db:", err: `DB_HOST "db:": invalid port ""`},
		{in: "db:abc", err: `DB_HOST "db:abc": invalid port "abc"`},
		{in: "db:+3306", err: `DB_HOST "db:+3306": invalid port "+3306"`},
		{in: "db:70000", err: `DB_HOST "db:70000": invalid port "70000"`},
		{in: "db:0", err: `DB_HOST "db:0": invalid port "0"`},
		{in: "db host", err: `DB_HOST "db host": invalid host name "db host"`},
		{in: "user@db", err: `DB_HOST "user@db": invalid host name "user@db"`},
		{in: "[::1", err: `DB_HOST "[::1": missing ']'`},
		{in: "[::1]3306", err: `DB_HOST "[::1]3306": unexpected "3306" after ']'`},
		{in: "[::1]:", err: `DB_HOST "[::1]:": invalid port ""`},
		{in: "[127.0.0.1]:3306", err: `DB_HOST "[127.0.0.1]:3306": invalid IPv6 address "127.0.0.1"`},
		{in: "::1:zz", err: `DB_HOST "::1:zz": invalid IPv6 address "::1:zz"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseHost(tt.in)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDSN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		s                Settings
		params           string
		dsn              string
		net, addr        string // as mysql.ParseDSN reports them
		checkParsedParam func(t *testing.T, c *mysql.Config)
	}{
		{name: "tcp default port",
			s:   Settings{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", DBHost: "db.internal"},
			dsn: "wp:secret@tcp(db.internal:3306)/wordpress", net: "tcp", addr: "db.internal:3306"},
		{name: "tcp explicit port and params",
			s:      Settings{DBName: "wp", DBUser: "u", DBPassword: "p", DBHost: "127.0.0.1:3307"},
			params: "parseTime=true&loc=UTC",
			dsn:    "u:p@tcp(127.0.0.1:3307)/wp?parseTime=true&loc=UTC", net: "tcp", addr: "127.0.0.1:3307",
			checkParsedParam: func(t *testing.T, c *mysql.Config) {
				require.True(t, c.ParseTime)
				require.Equal(t, time.UTC, c.Loc)
			}},
		{name: "leading ? in params is dropped, escaped slash allowed",
			s:      Settings{DBName: "wp", DBUser: "u", DBHost: "db"},
			params: "?loc=Europe%2FBerlin",
			dsn:    "u@tcp(db:3306)/wp?loc=Europe%2FBerlin", net: "tcp", addr: "db:3306",
			checkParsedParam: func(t *testing.T, c *mysql.Config) { require.Equal(t, "Europe/Berlin", c.Loc.String()) }},
		{name: "localhost without socket stays tcp",
			s:   Settings{DBName: "wp", DBUser: "u", DBPassword: "p", DBHost: "localhost"},
			dsn: "u:p@tcp(localhost:3306)/wp", net: "tcp", addr: "localhost:3306"},
		{name: "localhost with socket",
			s:   Settings{DBName: "wp", DBUser: "u", DBPassword: "p", DBHost: "localhost:/var/run/mysqld/mysqld.sock"},
			dsn: "u:p@unix(/var/run/mysqld/mysqld.sock)/wp", net: "unix", addr: "/var/run/mysqld/mysqld.sock"},
		{name: "socket only",
			s:   Settings{DBName: "wp", DBUser: "u", DBPassword: "p", DBHost: ":/tmp/my (1).sock"},
			dsn: "u:p@unix(/tmp/my (1).sock)/wp", net: "unix", addr: "/tmp/my (1).sock"},
		{name: "bare socket path",
			s:   Settings{DBName: "wp", DBUser: "u", DBPassword: "p", DBHost: "/tmp/mysql.sock"},
			dsn: "u:p@unix(/tmp/mysql.sock)/wp", net: "unix", addr: "/tmp/mysql.sock"},
		{name: "socket with remote host is ignored like mysqli",
			s:   Settings{DBName: "wp", DBUser: "u", DBPassword: "p", DBHost: "db.internal:/tmp/mysql.sock"},
			dsn: "u:p@tcp(db.internal:3306)/wp", net: "tcp", addr: "db.internal:3306"},
		{name: "ipv6",
			s:   Settings{DBName: "wp", DBUser: "u", DBPassword: "p", DBHost: "[::1]:3307"},
			dsn: "u:p@tcp([::1]:3307)/wp", net: "tcp", addr: "[::1]:3307"},
		{name: "ipv6 without brackets",
			s:   Settings{DBName: "wp", DBUser: "u", DBPassword: "p", DBHost: "2001:db8::7"},
			dsn: "u:p@tcp([2001:db8::7]:3306)/wp", net: "tcp", addr: "[2001:db8::7]:3306"},
		{name: "special characters in password",
			s:   Settings{DBName: "wp", DBUser: "u", DBPassword: `p@ss:w/o)rd(?&=#%'"\ @tcp(x)/y`, DBHost: "db"},
			dsn: `u:p@ss:w/o)rd(?&=#%'"\ @tcp(x)/y@tcp(db:3306)/wp`, net: "tcp", addr: "db:3306"},
		{name: "password ending in @ and slash",
			s:   Settings{DBName: "wp", DBUser: "u", DBPassword: "@/", DBHost: ":/s.sock"},
			dsn: "u:@/@unix(/s.sock)/wp", net: "unix", addr: "/s.sock"},
		{name: "password from stock config",
			s:   Settings{DBName: "acme_wp", DBUser: "acme_wp_user", DBPassword: `c0rr3ct:h0rse@batt/ery's #1`, DBHost: "db.internal:3307"},
			dsn: `acme_wp_user:c0rr3ct:h0rse@batt/ery's #1@tcp(db.internal:3307)/acme_wp`, net: "tcp", addr: "db.internal:3307"},
		{name: "user with @, empty password",
			s:   Settings{DBName: "wp", DBUser: "me@example", DBHost: "db"},
			dsn: "me@example@tcp(db:3306)/wp", net: "tcp", addr: "db:3306"},
		{name: "database name is escaped",
			s:   Settings{DBName: "my/db?x=1%", DBUser: "u", DBPassword: "p", DBHost: "db"},
			dsn: "u:p@tcp(db:3306)/my%2Fdb%3Fx=1%25", net: "tcp", addr: "db:3306"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dsn, err := tt.s.DSN(tt.params)
			require.NoError(t, err)
			require.Equal(t, tt.dsn, dsn)

			cfg, err := mysql.ParseDSN(dsn)
			require.NoError(t, err)
			require.Equal(t, tt.s.DBUser, cfg.User)
			require.Equal(t, tt.s.DBPassword, cfg.Passwd)
			require.Equal(t, tt.net, cfg.Net)
			require.Equal(t, tt.addr, cfg.Addr)
			require.Equal(t, tt.s.DBName, cfg.DBName)
			if tt.checkParsedParam != nil {
				tt.checkParsedParam(t, cfg)
			}
		})
	}
}

func TestDSNFromStockFile(t *testing.T) {
	t.Parallel()
	s, err := ParseFile("testdata/wp-config.php")
	require.NoError(t, err)
	dsn, err := s.DSN("parseTime=true")
	require.NoError(t, err)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	require.Equal(t, "acme_wp_user", cfg.User)
	require.Equal(t, `c0rr3ct:h0rse@batt/ery's #1`, cfg.Passwd)
	require.Equal(t, "tcp", cfg.Net)
	require.Equal(t, "db.internal:3307", cfg.Addr)
	require.Equal(t, "acme_wp", cfg.DBName)
	require.True(t, cfg.ParseTime)
}

func TestDSNErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		s      Settings
		params string
		err    string
	}{
		{"bad host", Settings{DBUser: "u", DBHost: "db:x"}, "", `DB_HOST "db:x": invalid port "x"`},
		{"colon in user", Settings{DBUser: "a:b", DBHost: "db"}, "", "DB_USER contains ':', which a mysql DSN cannot express"},
		{"@ in socket", Settings{DBUser: "u", DBHost: ":/run/a@b.sock"}, "", `DB_HOST socket "/run/a@b.sock" contains '@', which a mysql DSN cannot express`},
		{"raw slash in params", Settings{DBUser: "u", DBHost: "db"}, "loc=Europe/Berlin", `DSN params "loc=Europe/Berlin" contain '/'; escape it as %2F`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.s.DSN(tt.params)
			require.EqualError(t, err, tt.err)
		})
	}
}

func FuzzDSN(f *testing.F) {
	f.Add("u", `p@ss:w/o)rd(`, "db/x", "localhost:/tmp/s.sock")
	f.Add("me@x", "", "wp", "[::1]:3307")
	f.Fuzz(func(t *testing.T, user, pass, db, host string) {
		s := Settings{DBUser: user, DBPassword: pass, DBName: db, DBHost: host}
		dsn, err := s.DSN("parseTime=true")
		if err != nil {
			return
		}
		cfg, err := mysql.ParseDSN(dsn)
		require.NoError(t, err, dsn)
		require.Equal(t, user, cfg.User, dsn)
		require.Equal(t, pass, cfg.Passwd, dsn)
		require.Equal(t, db, cfg.DBName, dsn)
		require.True(t, cfg.ParseTime, dsn)
	})
}
