package phppool

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
)

func TestFramesRoundTripAndRejectCorruption(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, writeFrame(&buf, []byte(`{"type":"ready"}`)))
	require.NoError(t, writeFrame(&buf, []byte(`{}`)))
	require.Equal(t, []byte{0, 0, 0, 16}, buf.Bytes()[:4], "big-endian length")
	b, err := readFrame(&buf)
	require.NoError(t, err)
	require.Equal(t, `{"type":"ready"}`, string(b))
	b, err = readFrame(&buf)
	require.NoError(t, err)
	require.Equal(t, `{}`, string(b))
	_, err = readFrame(&buf)
	require.ErrorIs(t, err, io.EOF, "clean end between frames")

	_, err = readFrame(bytes.NewReader([]byte{0, 0, 0, 9, '{', '}'}))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut inside a frame")
	_, err = readFrame(bytes.NewReader([]byte{0, 0}))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut inside the header")

	huge := binary.BigEndian.AppendUint32(nil, MaxFrameSize+1)
	_, err = readFrame(bytes.NewReader(huge))
	require.ErrorContains(t, err, "larger than the 67108864-byte limit")
	require.ErrorContains(t, writeFrame(io.Discard, make([]byte, MaxFrameSize+1)), "larger than")
}

func TestRunRequestCarriesThePayloadAsPHPEncodedIt(t *testing.T) {
	t.Parallel()
	raw := `{"text":"h\u00e9llo \ud83d\ude00","path":"a\/b","big":9007199254740993,"f":0.1,"empty":[],"map":{"k":null}}`
	v, err := phpjson.DecodeString(raw)
	require.NoError(t, err)
	b, err := encodeRun(7, &queuety.Job{ID: 42, Queue: "mail", Handler: `App\Jobs\Send`, Priority: queuety.PriorityHigh, Attempt: 2, MaxAttempts: 5, Payload: v})
	require.NoError(t, err)
	require.Equal(t, `{"type":"run","seq":7,"job":{"id":42,"handler":"App\\Jobs\\Send","queue":"mail","attempt":2,"max_attempts":5,"priority":2},"payload":`+raw+`}`, string(b))

	b, err = encodeRun(8, &queuety.Job{ID: 1, Handler: "x"})
	require.NoError(t, err)
	require.Contains(t, string(b), `"payload":[]}`, "no payload: PHP gets []")
}

func TestHeartbeatProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, want string }{
		{``, ""}, {`null`, ""}, {`[]`, ""}, {`{}`, ""},
		{`{"processed":50,"total":100}`, `{"processed":50,"total":100}`},
		{`[1,2]`, `[1,2]`},
	} {
		v, err := progressValue([]byte(tc.raw))
		require.NoError(t, err)
		if tc.want == "" {
			require.Nil(t, v, "%q only refreshes reserved_at, as beat([]) does", tc.raw)
			continue
		}
		b, err := phpjson.Encode(v.(phpjson.Value))
		require.NoError(t, err)
		require.Equal(t, tc.want, string(b), "PHP's bytes kept")
	}
	_, err := progressValue([]byte(`{bad`))
	require.Error(t, err)
}

func TestRestartBackoff(t *testing.T) {
	t.Parallel()
	require.Zero(t, restartDelay(0))
	require.Zero(t, restartDelay(1), "the first crash restarts at once")
	require.Equal(t, firstRestartDelay, restartDelay(2))
	require.Equal(t, 2*firstRestartDelay, restartDelay(3))
	require.Equal(t, maxRestartDelay, restartDelay(50))
}

func TestOutputLinesAreLoggedAndKept(t *testing.T) {
	t.Parallel()
	tail := &outputTail{}
	var n atomicInt
	l := &lineLogger{log: discard, stream: "stdout", tail: tail, lines: &n.Int64}
	_, _ = l.Write([]byte("one\ntw"))
	_, _ = l.Write([]byte("o\r\n\n   \nthree"))
	require.Equal(t, "one\ntwo", tail.String(), "blank lines dropped, CR trimmed, partial line held")
	l.flush()
	require.Equal(t, "three", tail.last())
	for i := range 10 {
		tail.add(string(rune('a' + i)))
	}
	require.Equal(t, "f\ng\nh\ni\nj", tail.String(), "only the last lines are kept")

	_, _ = l.Write(bytes.Repeat([]byte("x"), maxLogLine+10))
	last := tail.last()
	require.Equal(t, maxLogLine+len("…"), len(last), "a runaway line is cut without waiting for its newline")
	require.True(t, strings.HasSuffix(last, "…"))
}
