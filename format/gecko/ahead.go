package gecko

import (
	"io"
	"sync"
)

// Compression is the slow half of reading or writing a gzipped profile, so
// it runs on its own goroutine, a chunk ahead of the JSON work.

const aheadChunk = 1 << 20

type chunk struct {
	b   []byte
	err error
}

// aheadReader reads src on another goroutine.
type aheadReader struct {
	full chan chunk
	free chan []byte
	done chan struct{}
	exit chan struct{}
	cur  []byte
	buf  []byte // the buffer cur is in, to return to free
	err  error
	once sync.Once
}

func newAheadReader(src io.Reader) *aheadReader {
	r := &aheadReader{
		full: make(chan chunk, 2),
		free: make(chan []byte, 3),
		done: make(chan struct{}),
		exit: make(chan struct{}),
	}
	for range 3 {
		r.free <- make([]byte, aheadChunk)
	}
	go func() {
		defer close(r.exit)
		for {
			var b []byte
			select {
			case b = <-r.free:
			case <-r.done:
				return
			}
			n := 0
			var err error
			for n < len(b) && err == nil {
				var m int
				m, err = src.Read(b[n:])
				n += m
			}
			select {
			case r.full <- chunk{b[:n], err}:
			case <-r.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return r
}

func (r *aheadReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.buf != nil {
			r.free <- r.buf[:cap(r.buf)]
			r.buf = nil
		}
		c := <-r.full
		r.cur, r.buf, r.err = c.b, c.b, c.err
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// Close stops the reading goroutine and waits for it, so that src is not
// touched once Close returns.
func (r *aheadReader) Close() {
	r.once.Do(func() { close(r.done) })
	<-r.exit
}

// aheadWriter writes to dst on another goroutine. Close flushes, waits and
// reports the first error.
type aheadWriter struct {
	full chan []byte
	free chan []byte
	errc chan error
	cur  []byte
	err  error // once closed
}

func newAheadWriter(dst io.Writer) *aheadWriter {
	w := &aheadWriter{
		full: make(chan []byte, 2),
		free: make(chan []byte, 3),
		errc: make(chan error, 1),
	}
	for range 2 {
		w.free <- make([]byte, 0, aheadChunk)
	}
	w.cur = make([]byte, 0, aheadChunk)
	full, free, errc := w.full, w.free, w.errc
	go func() {
		var err error
		for b := range full {
			if err == nil {
				_, err = dst.Write(b)
			}
			free <- b[:0]
		}
		errc <- err
	}()
	return w
}

func (w *aheadWriter) Write(p []byte) (int, error) {
	if w.full == nil {
		return 0, io.ErrClosedPipe
	}
	n := len(p)
	for len(p) > 0 {
		m := copy(w.cur[len(w.cur):cap(w.cur)], p)
		w.cur = w.cur[:len(w.cur)+m]
		p = p[m:]
		if len(w.cur) == cap(w.cur) {
			w.full <- w.cur
			w.cur = <-w.free
		}
	}
	return n, nil
}

func (w *aheadWriter) Close() error {
	if w.full == nil {
		return w.err
	}
	if len(w.cur) > 0 {
		w.full <- w.cur
	}
	close(w.full)
	w.full = nil
	w.err = <-w.errc
	return w.err
}
