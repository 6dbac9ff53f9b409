package store

import (
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// A server that answered is not "cannot reach": the message says what it
// refused and the fix.
func TestConnectError(t *testing.T) {
	t.Parallel()
	const dsn = "app:secret@tcp(db:3306)/site"
	for _, tc := range []struct {
		number uint16
		want   string
	}{
		{1045, "refused the login"},
		{1698, "refused the login"},
		{1044, "GRANT ALL ON `site`.* TO the user"},
		{1049, "CREATE DATABASE `site`"},
		{1227, "refused the connection"},
	} {
		err := connectError(dsn, &mysql.MySQLError{Number: tc.number, Message: "x"})
		require.ErrorContains(t, err, tc.want)
		require.NotContains(t, err.Error(), "cannot reach")
		require.NotContains(t, err.Error(), "secret")
		var me *mysql.MySQLError
		require.True(t, errors.As(err, &me), "the driver's error stays inspectable")
	}
	require.ErrorContains(t, connectError(dsn, errors.New("dial tcp: refused")), "cannot reach MySQL at tcp(db:3306)/site")

	require.ErrorContains(t, CheckDSN("root@tcp(127.0.0.1:3306)/"), "names no database")
	err := CheckDSN("root@127.0.0.1:3306/x")
	require.ErrorContains(t, err, "default addr for network")
	require.NotContains(t, err.Error(), "%!w")
	require.NoError(t, CheckDSN("root@tcp(127.0.0.1:3306)/x"))
}
