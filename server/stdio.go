package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sync"
)

// MaxMessageSize bounds one incoming message.
const MaxMessageSize = 16 << 20

// ServeStdio serves one connection of newline-delimited JSON: requests on
// r, responses and notifications on w (rein serve --stdio). It returns when
// r ends or ctx is done.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.ServeConn(ctx, NewLineTransport(r, w))
}

// NewLineTransport returns a transport of one JSON object per line. Close
// closes r and w when they are io.Closers.
func NewLineTransport(r io.Reader, w io.Writer) Transport {
	return &lines{r: bufio.NewReaderSize(r, 64<<10), rc: r, w: w}
}

type lines struct {
	r  *bufio.Reader
	rc io.Reader
	mu sync.Mutex // one writer at a time
	w  io.Writer

	once sync.Once
}

func (l *lines) Read(context.Context) ([]byte, error) {
	var msg []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		msg = append(msg, chunk...)
		if len(msg) > MaxMessageSize {
			return nil, fmt.Errorf("server: a message is longer than %d bytes", MaxMessageSize)
		}
		switch err {
		case nil:
			return msg, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(msg) > 0 {
				return msg, nil
			}
		}
		return nil, err
	}
}

func (l *lines) Write(_ context.Context, msg []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	_, err := l.w.Write(buf)
	return err
}

func (l *lines) Close() error {
	l.once.Do(func() {
		if c, ok := l.rc.(io.Closer); ok {
			c.Close()
		}
		if c, ok := l.w.(io.Closer); ok {
			c.Close()
		}
	})
	return nil
}
