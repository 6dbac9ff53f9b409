package phppool

import (
	"encoding/binary"
	"fmt"
	"io"
)

// MaxFrameSize bounds one frame's JSON body, both ways. A larger length
// prefix means the stream is corrupt (or a payload is absurd); the process
// is then killed rather than asked to allocate it.
const MaxFrameSize = 64 << 20

// writeFrame writes body with its length prefix in one write, so a frame
// is never interleaved with anything else on the pipe.
func writeFrame(w io.Writer, body []byte) error {
	if len(body) > MaxFrameSize {
		return fmt.Errorf("frame of %d bytes is larger than the %d-byte limit", len(body), MaxFrameSize)
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err := w.Write(buf)
	return err
}

// readFrame reads one frame body. It returns io.EOF only at a clean frame
// boundary; a stream cut inside a frame is io.ErrUnexpectedEOF.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrameSize {
		return nil, fmt.Errorf("frame length %d is larger than the %d-byte limit (corrupt stream?)", n, MaxFrameSize)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}
