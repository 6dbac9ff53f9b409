package phppool

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// shellQuote quotes a word so a POSIX shell reads it back literally.
func shellQuote(w string) string {
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// FuzzSplitCommand: --php's command line is split like a shell's words.
// Whatever the input, the split either fails or gives words that, quoted
// back, split to the same words byte for byte; an input of plain words
// (no quotes, escapes or blanks inside) splits on its blanks.
//
//	go test ./queuety/internal/phppool -run '^$' -fuzz '^FuzzSplitCommand$' -fuzztime 60s
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{
		`php php-bridge/bin/queuety-php-worker --bootstrap app.php`,
		"  php\t-d memory_limit=256M  w.php ",
		`php w --bootstrap "/srv/my app/app.php"`, `php w --bootstrap '/srv/it''s/app.php'`,
		`php w --bootstrap /srv/my\ app/a.php`, `php "a\"b" "c\d" "e\\f" ""`, `php a"b c"d`, "php a\\\nb",
		"php\f\v x", `php 'oops`, `php "oops`, `php oops\`, "   ", "", "php /srv/\xff\xfe/app.php", "php 'caf\xc3'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitCommand(s)
		if err != nil {
			require.Nil(t, words)
			return
		}
		require.NotEmpty(t, words)
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = shellQuote(w)
		}
		again, err := SplitCommand(strings.Join(quoted, " "))
		require.NoError(t, err)
		require.Equal(t, words, again, "quoted back: %q", strings.Join(quoted, " "))
		if !strings.ContainsAny(s, `'"\`) {
			// The shell's default IFS: space, tab, newline (not \f or \v).
			require.Equal(t, strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }), words)
		}
	})
}

// FuzzReadFrame: the pool reads length-prefixed frames from PHP's fd 3.
// Whatever the stream, readFrame returns the frames it holds, each of which
// written back gives exactly the bytes consumed; it stops with io.EOF only
// at a frame boundary at the end, io.ErrUnexpectedEOF inside a frame, or an
// error for a length over the limit. Each frame then decodes as the pool
// does (a message, its progress) without panicking.
//
//	go test ./queuety/internal/phppool -run '^$' -fuzz '^FuzzReadFrame$' -fuzztime 60s
func FuzzReadFrame(f *testing.F) {
	frame := func(bodies ...string) []byte {
		var b bytes.Buffer
		for _, body := range bodies {
			require.NoError(f, writeFrame(&b, []byte(body)))
		}
		return b.Bytes()
	}
	f.Add(frame(`{"type":"ready","protocol":1,"pid":42,"php":"8.2.0"}`))
	f.Add(frame(`{"type":"heartbeat","seq":3,"progress":{"pct":50}}`, `{"type":"done","seq":3,"ok":true,"memory":1024,"output":[]}`))
	f.Add(frame(`{"type":"done","seq":4,"ok":false,"error":{"class":"E","message":"m","trace":"#0"}}`, `{}`))
	f.Add(frame(`{"type":"heartbeat","seq":1,"progress":[]}`, `{"type":"heartbeat","progress":"\ud800"}`))
	f.Add(frame(`not json`, ``))
	f.Add([]byte{0, 0, 0, 9, '{', '}'})
	f.Add([]byte{0, 0})
	f.Add(binary.BigEndian.AppendUint32(nil, MaxFrameSize+1))
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bytes.NewReader(stream)
		var rebuilt bytes.Buffer
		for {
			before := r.Len()
			body, err := readFrame(r)
			if err != nil {
				switch {
				case errors.Is(err, io.EOF):
					require.Equal(t, 0, before, "io.EOF with %d bytes left", before)
				case errors.Is(err, io.ErrUnexpectedEOF):
					require.Greater(t, before, 0)
				default:
					require.ErrorContains(t, err, "larger than")
				}
				break
			}
			require.LessOrEqual(t, len(body), MaxFrameSize)
			require.NoError(t, writeFrame(&rebuilt, body))
			var m message
			if json.Unmarshal(body, &m) == nil {
				_, _ = progressValue(m.Progress)
			}
		}
		consumed := len(stream) - r.Len()
		require.LessOrEqual(t, rebuilt.Len(), consumed)
		require.True(t, bytes.Equal(stream[:rebuilt.Len()], rebuilt.Bytes()), "frames written back differ from the stream")
	})
}
