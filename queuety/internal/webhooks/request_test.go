package webhooks

import (
	"bufio"
	"bytes"
	"net/textproto"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWebhookRequestBytes: the request the plugin's stream wrapper writes,
// for the URL forms a site may register.
func TestWebhookRequestBytes(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a":1}`)
	for _, tc := range []struct{ url, head string }{
		{"http://example.com/h", "POST /h HTTP/1.1\r\nHost: example.com\r\n"},
		{"http://example.com:80", "POST / HTTP/1.1\r\nHost: example.com\r\n"},
		{"https://example.com:443/a/b?x=1&y=%2F#frag", "POST /a/b?x=1&y=%2F HTTP/1.1\r\nHost: example.com\r\n"},
		{"https://example.com:8443/", "POST / HTTP/1.1\r\nHost: example.com:8443\r\n"},
		{"http://[::1]:9000/h", "POST /h HTTP/1.1\r\nHost: [::1]:9000\r\n"},
		{"http://u:p%40ss@example.com/h", "POST /h HTTP/1.1\r\nAuthorization: Basic dTpwQHNz\r\nHost: example.com\r\n"},
	} {
		u, err := ParseURL(tc.url)
		require.NoError(t, err, tc.url)
		want := tc.head + "Connection: close\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n" + `{"a":1}`
		require.Equal(t, want, string(request(u, body)), tc.url)
	}
	for _, bad := range []string{"ftp://example.com/", "http:///nohost", "::"} {
		_, err := ParseURL(bad)
		require.Error(t, err, bad)
	}
	// The bytes a real HTTP parser reads: one request, no User-Agent.
	u, _ := ParseURL("http://example.com/h")
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(request(u, body))))
	_, err := tp.ReadLine()
	require.NoError(t, err)
	hdr, err := tp.ReadMIMEHeader()
	require.NoError(t, err)
	require.Empty(t, hdr.Get("User-Agent"))
	require.Empty(t, hdr.Get("Accept-Encoding"))
	require.Equal(t, "7", hdr.Get("Content-Length"))
}
