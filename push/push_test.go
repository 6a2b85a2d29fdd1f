package push

import (
	"compress/gzip"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// status encodes a google.rpc.Status with message msg, as collectors
// answer a refused OTLP/HTTP request (code 3, then the message; both
// shorter than 128).
func status(code byte, msg string) []byte {
	b := []byte{1<<3 | 0, code, 2<<3 | 2, byte(len(msg))}
	return append(b, msg...)
}

// collector answers with the statuses in order (the last one from then
// on), and records what it was sent.
type collector struct {
	answers []int
	calls   atomic.Int32
	body    atomic.Value // []byte, decompressed
	header  atomic.Value // http.Header
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(c.calls.Add(1))
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, _ := io.ReadAll(body)
	c.body.Store(data)
	c.header.Store(r.Header.Clone())
	code := c.answers[min(n, len(c.answers))-1]
	w.Header().Set("Content-Type", "application/x-protobuf")
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(code)
	if code != http.StatusOK {
		w.Write(status(3, "profile has no samples (bad luck)"))
	}
}

func fast(url string) Options {
	return Options{URL: url, Timeout: 10 * time.Second, firstWait: 10 * time.Millisecond}
}

func TestSendOK(t *testing.T) {
	c := &collector{answers: []int{200}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	o := fast(srv.URL + ProfilesPath)
	o.Header = http.Header{"Authorization": {"Bearer x"}}
	o.UserAgent = "gprof/test"
	res, err := Send(context.Background(), []byte("request bytes"), o)
	if err != nil || res.Attempts != 1 {
		t.Fatalf("Send: %v, %+v", err, res)
	}
	if got := string(c.body.Load().([]byte)); got != "request bytes" {
		t.Errorf("the collector got %q", got)
	}
	h := c.header.Load().(http.Header)
	for k, want := range map[string]string{
		"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip", "Authorization": "Bearer x",
		"User-Agent": "gprof/test", DevelopmentVersionHeader: "1",
	} {
		if h.Get(k) != want {
			t.Errorf("header %s = %q, want %q", k, h.Get(k), want)
		}
	}
	o.NoGzip = true
	if _, err := Send(context.Background(), []byte("plain"), o); err != nil {
		t.Fatal(err)
	}
	if h := c.header.Load().(http.Header); h.Get("Content-Encoding") != "" || string(c.body.Load().([]byte)) != "plain" {
		t.Errorf("--no-gzip sent %q with Content-Encoding %q", c.body.Load(), h.Get("Content-Encoding"))
	}
}

// TestSendRetries: 503 and 429 are tried again (429's Retry-After obeyed)
// until the collector takes the profile.
func TestSendRetries(t *testing.T) {
	c := &collector{answers: []int{503, 429, 200}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	var waits []time.Duration
	o := fast(srv.URL)
	o.Retrying = func(err error, d time.Duration) { waits = append(waits, d) }
	res, err := Send(context.Background(), []byte("x"), o)
	if err != nil || res.Attempts != 3 {
		t.Fatalf("Send: %v, %+v", err, res)
	}
	if len(waits) != 2 || waits[1] < time.Second {
		t.Errorf("waits %v: want two, the second the 1 s Retry-After asked", waits)
	}
}

// TestSendGivesUp: a collector that always answers 503 is given up on
// within the time bound, with what it said.
func TestSendGivesUp(t *testing.T) {
	c := &collector{answers: []int{503}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	o := fast(srv.URL)
	o.Timeout = 1500 * time.Millisecond
	start := time.Now()
	_, err := Send(context.Background(), []byte("x"), o)
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != 503 || !pe.Retried || pe.Attempts < 3 {
		t.Fatalf("Send: %v (%+v)", err, pe)
	}
	if el := time.Since(start); el > o.Timeout+time.Second {
		t.Errorf("gave up after %s, bound %s", el, o.Timeout)
	}
	if !strings.Contains(err.Error(), "503 Service Unavailable: profile has no samples (bad luck)") || !strings.Contains(err.Error(), "gave up after") {
		t.Errorf("message %q", err)
	}
}

// TestSendRefused: a 400 is final, and says what the collector said.
func TestSendRefused(t *testing.T) {
	c := &collector{answers: []int{400}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	_, err := Send(context.Background(), []byte("x"), fast(srv.URL))
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != 400 || pe.Attempts != 1 || pe.Retried {
		t.Fatalf("Send: %v", err)
	}
	if want := "answered 400 Bad Request: profile has no samples (bad luck)"; !strings.Contains(err.Error(), want) {
		t.Errorf("message %q, want %q", err, want)
	}
}

func TestSendUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	o := fast(url)
	o.Timeout = time.Second
	_, err = Send(context.Background(), []byte("x"), o)
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != 0 || !pe.Retried || pe.Attempts < 2 || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Send: %v", err)
	}
}

// TestSendTLS: an https collector is reached with its CA given, and a
// certificate nobody vouches for is refused at once (no retries).
func TestSendTLS(t *testing.T) {
	c := &collector{answers: []int{200}}
	srv := httptest.NewTLSServer(c)
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	o := fast(srv.URL)
	o.RootCAs = pool
	if _, err := Send(context.Background(), []byte("x"), o); err != nil {
		t.Fatal(err)
	}
	_, err := Send(context.Background(), []byte("x"), fast(srv.URL))
	var pe *Error
	if !errors.As(err, &pe) || pe.Attempts != 1 || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("unknown CA: %v", err)
	}
}

func TestPartialSuccess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// partial_success { rejected_profiles: 2, error_message: "too old" }
		ps := append([]byte{1<<3 | 0, 2, 2<<3 | 2, 7}, "too old"...)
		b := append([]byte{1<<3 | 2, byte(len(ps))}, ps...)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	defer srv.Close()
	_, err := Send(context.Background(), []byte("x"), fast(srv.URL))
	var pe *Error
	if !errors.As(err, &pe) || pe.Rejected != 2 || !strings.Contains(err.Error(), "rejected 2 profiles: too old") {
		t.Fatalf("Send: %v", err)
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:4318":                        "http://localhost:4318/v1development/profiles",
		"http://localhost:4318/":                       "http://localhost:4318/v1development/profiles",
		"https://otel.example.com/custom/path":         "https://otel.example.com/custom/path",
		"http://127.0.0.1:4318/v1development/profiles": "http://127.0.0.1:4318/v1development/profiles",
	} {
		if got, err := Endpoint(in); err != nil || got != want {
			t.Errorf("Endpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"localhost:4318", "ftp://x", "http://", "", "://x"} {
		if got, err := Endpoint(bad); err == nil {
			t.Errorf("Endpoint(%q) = %q, want an error", bad, got)
		}
	}
}

func TestParseHeader(t *testing.T) {
	if k, v, err := ParseHeader("authorization:  Bearer a:b "); err != nil || k != "Authorization" || v != "Bearer a:b" {
		t.Errorf("got %q %q %v", k, v, err)
	}
	for _, bad := range []string{"no colon", ": v", "a b: c", "x: a\nb"} {
		if _, _, err := ParseHeader(bad); err == nil {
			t.Errorf("ParseHeader(%q) accepted", bad)
		}
	}
}

// TestSendSilentCollector: a collector that never answers costs the time
// bound, not more.
func TestSendSilentCollector(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices the client has gone only once the body is
		// read.
		io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	o := fast(srv.URL)
	o.Timeout = 500 * time.Millisecond
	start := time.Now()
	_, err := Send(context.Background(), []byte("x"), o)
	var pe *Error
	if !errors.As(err, &pe) || !pe.Retried || !strings.Contains(err.Error(), "gave up after 1 attempt over") {
		t.Fatalf("Send: %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s for a bound of %s", el, o.Timeout)
	}
}
