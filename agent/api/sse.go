package api

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// maxEvent bounds one server-sent event: deltas are small, and a server
// that sends more in one event is not speaking either API.
const maxEvent = 8 << 20

// event is one server-sent event.
type event struct {
	Name string // the event: field; "" when the server sent none
	Data []byte // the data: lines, joined by newlines
}

// sseReader reads server-sent events as the HTML standard defines them:
// fields up to a blank line, comments starting with a colon, data lines
// joined.
type sseReader struct {
	r   *bufio.Reader
	buf []byte
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next event; io.EOF when the stream ended between events,
// io.ErrUnexpectedEOF when it ended inside one.
func (s *sseReader) next() (event, error) {
	var ev event
	var data bytes.Buffer
	started := false
	for {
		line, err := s.line()
		if err != nil {
			if err == io.EOF && started {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		if len(line) == 0 {
			if !started {
				continue
			}
			ev.Data = data.Bytes()
			return ev, nil
		}
		if line[0] == ':' {
			continue // a comment: a keep-alive
		}
		started = true
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			if data.Len()+len(value) > maxEvent {
				return ev, fmt.Errorf("server-sent event longer than %d bytes", maxEvent)
			}
			data.Write(value)
		}
		// id: and retry: mean nothing for a single response.
	}
}

// line reads one line without its line ending, bounded by maxEvent.
func (s *sseReader) line() ([]byte, error) {
	s.buf = s.buf[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.buf = append(s.buf, chunk...)
		if len(s.buf) > maxEvent {
			return nil, fmt.Errorf("server-sent event line longer than %d bytes", maxEvent)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(s.buf) > 0 {
				// A last line without its newline is cut off: what it held
				// cannot be trusted to be whole.
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line := bytes.TrimSuffix(s.buf, []byte("\n"))
		return bytes.TrimSuffix(line, []byte("\r")), nil
	}
}
