package testdb

import (
	"context"
	"fmt"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"
)

// Multisite creates a multisite network's own tables in the database of
// dsn, as WordPress's wp-admin/includes/schema.php makes them for the base
// prefix: <base>site with the network and <base>blogs with the main site
// (blog 1, path /) and one subsite a path for each of paths (blog 2, 3, …).
// Queuety's tables of each prefix are the caller's (migrate).
func Multisite(t testing.TB, dsn, base string, paths ...string) {
	t.Helper()
	db, err := sqlx.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	for _, ddl := range []string{
		"CREATE TABLE `" + base + "site` (" +
			"id bigint(20) NOT NULL auto_increment, domain varchar(200) NOT NULL default '', path varchar(100) NOT NULL default ''," +
			"PRIMARY KEY (id), KEY domain (domain(140),path(51))) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci",
		"CREATE TABLE `" + base + "blogs` (" +
			"blog_id bigint(20) NOT NULL auto_increment, site_id bigint(20) NOT NULL default '0'," +
			"domain varchar(200) NOT NULL default '', path varchar(100) NOT NULL default ''," +
			"registered datetime NOT NULL default '0000-00-00 00:00:00', last_updated datetime NOT NULL default '0000-00-00 00:00:00'," +
			"public tinyint(2) NOT NULL default '1', archived tinyint(2) NOT NULL default '0', mature tinyint(2) NOT NULL default '0'," +
			"spam tinyint(2) NOT NULL default '0', deleted tinyint(2) NOT NULL default '0', lang_id int(11) NOT NULL default '0'," +
			"PRIMARY KEY (blog_id), KEY domain (domain(50),path(5)), KEY lang_id (lang_id)) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci",
		"INSERT INTO `" + base + "site` (id, domain, path) VALUES (1, 'example.test', '/')",
		"INSERT INTO `" + base + "blogs` (blog_id, site_id, domain, path, registered) VALUES (1, 1, 'example.test', '/', NOW())",
	} {
		_, err := db.ExecContext(ctx, ddl)
		require.NoError(t, err, ddl)
	}
	for _, p := range paths {
		AddBlog(t, dsn, base, p)
	}
}

// AddBlog adds a subsite at path to the network of base, as wpmu_create_blog
// does, and returns its blog_id.
func AddBlog(t testing.TB, dsn, base, path string) int64 {
	t.Helper()
	db, err := sqlx.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	res, err := db.Exec(fmt.Sprintf("INSERT INTO `%sblogs` (site_id, domain, path, registered) VALUES (1, 'example.test', ?, NOW())", base), path)
	require.NoError(t, err)
	id, err := res.LastInsertId()
	require.NoError(t, err)
	return id
}
