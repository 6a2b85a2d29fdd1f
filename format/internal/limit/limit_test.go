package limit

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestBudget(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{
		{0, Floor},
		{Floor / PerByte, Floor},
		{1 << 30, PerByte << 30},
		{1 << 62, 1 << 62}, // saturates rather than overflows
	} {
		if got := Budget(c.n); got != c.want {
			t.Errorf("Budget(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// zeros is an endless decompressor's worth of output.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestInflated(t *testing.T) {
	f := NewFile(strings.NewReader("x"))
	io.ReadAll(f)
	n, err := io.Copy(io.Discard, Inflated(zeros{}, f))
	var le *Error
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "gzip data expands") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v", err)
	}
	if n < Floor || n > Floor+1<<20 {
		t.Errorf("read %d bytes before failing, want just past %d", n, Floor)
	}
}

func TestMeter(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 1<<20)
	f := NewFile(bytes.NewReader(data))
	m := NewMeter(f)
	if err := m.Hold(Floor); err != nil {
		t.Fatalf("holding the floor: %v", err)
	}
	if err := m.Hold(1); err == nil {
		t.Fatal("held past the floor before reading the file")
	}
	io.ReadAll(f) // the file now pays for PerByte MiB
	if err := m.Hold(PerByte<<20 - Floor - 1); err != nil {
		t.Fatalf("holding what the file pays for: %v", err)
	}
	if err := m.Hold(1); err == nil {
		t.Fatal("held past what the file pays for")
	}
}
