// Package push sends an OTLP request to a collector over OTLP/HTTP, and
// does not give up at the first failure: connection errors, 429 and 5xx
// answers are retried with exponential backoff (and the server's
// Retry-After) until a time bound, so that a collector restarting while a
// CI job ends does not lose the job's profile. Other answers are final,
// and the error says what the collector said.
package push

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProfilesPath is where OTLP/HTTP takes profiles.
const ProfilesPath = "/v1development/profiles"

// DevelopmentVersionHeader carries the version of the development schema
// of OTLP profiles a request is in; receivers reject the ones they do not
// know before decoding them. Missing means 1, which is the schema of
// opentelemetry-proto v1.10 and v1.11 that gprof writes.
const (
	DevelopmentVersionHeader = "OTLP-Profiles-Development-Version"
	DevelopmentVersion       = "1"
)

// DefaultTimeout bounds a push, retries included.
const DefaultTimeout = time.Minute

// Options say where and how to send.
type Options struct {
	// URL is the full endpoint (see Endpoint).
	URL string
	// Header holds extra request headers (authentication).
	Header http.Header
	// NoGzip sends the body as it is.
	NoGzip bool
	// RootCAs, when not nil, are the certificate authorities an https
	// collector's certificate is checked against (instead of the system's).
	RootCAs *x509.CertPool
	// Timeout bounds the whole push, retries included (DefaultTimeout if 0).
	Timeout time.Duration
	// UserAgent names the sender.
	UserAgent string
	// Retrying, when not nil, is told of each failed attempt that will be
	// tried again, and when.
	Retrying func(err error, wait time.Duration)

	// firstWait is the first backoff (tests shorten it).
	firstWait time.Duration
}

// Result is what a successful push learned.
type Result struct {
	Attempts int
	// Requests is how many requests a profile took (set by callers that
	// split one).
	Requests int
	// Warning is what the collector said while accepting everything
	// (a partial success with nothing rejected); usually empty.
	Warning string
}

// Error is a push that failed for good.
type Error struct {
	URL string
	// Status is the HTTP status of the last answer; 0 when there was none
	// (the collector could not be reached).
	Status int
	// Message is what the collector said (from its google.rpc.Status, JSON
	// or text answer), or the connection error.
	Message string
	// Rejected counts the profiles a partial success rejected.
	Rejected int64
	Attempts int
	Elapsed  time.Duration
	// Retried is true when the failure was retryable and the time bound
	// ran out.
	Retried bool
}

func (e *Error) Error() string {
	var s string
	switch {
	case e.Rejected > 0:
		s = fmt.Sprintf("the collector at %s rejected %d profiles: %s", e.URL, e.Rejected, e.Message)
	case e.Status == 0:
		s = fmt.Sprintf("cannot reach the collector at %s: %s", e.URL, e.Message)
	default:
		s = fmt.Sprintf("the collector at %s answered %d %s", e.URL, e.Status, http.StatusText(e.Status))
		if e.Message != "" {
			s += ": " + e.Message
		}
	}
	if e.Retried {
		attempts := "1 attempt"
		if e.Attempts != 1 {
			attempts = fmt.Sprintf("%d attempts", e.Attempts)
		}
		s += fmt.Sprintf(" (gave up after %s over %s)", attempts, e.Elapsed.Round(100*time.Millisecond))
	}
	return s
}

// Endpoint checks an endpoint given on the command line and returns the
// URL to post to: an http or https URL, to which ProfilesPath is added
// when it has no path of its own (http://collector:4318 is the usual
// form).
func Endpoint(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http:// or https:// URL, e.g. http://localhost:4318", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = ProfilesPath
	}
	return u.String(), nil
}

// ParseHeader reads a "Name: value" header.
func ParseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
		return "", "", fmt.Errorf("%q is not a header: use 'Name: value', e.g. 'Authorization: Bearer TOKEN'", s)
	}
	return http.CanonicalHeaderKey(name), strings.TrimSpace(value), nil
}

// LoadCAs reads PEM certificates from file, for collectors whose
// certificate a private authority signed.
func LoadCAs(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

// Send posts body, an encoded ExportProfilesServiceRequest, to o.URL.
func Send(ctx context.Context, body []byte, o Options) (Result, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	wait := o.firstWait
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	payload := body
	if !o.NoGzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		if err := zw.Close(); err != nil {
			return Result{}, err
		}
		payload = buf.Bytes()
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.RootCAs != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: o.RootCAs}
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	start := time.Now()
	deadline := start.Add(timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for attempt := 1; ; attempt++ {
		res, again, retryAfter, err := post(ctx, client, payload, o)
		if err == nil {
			res.Attempts = attempt
			return res, nil
		}
		var pe *Error
		if !errors.As(err, &pe) {
			return Result{}, err
		}
		pe.URL, pe.Attempts, pe.Elapsed = o.URL, attempt, time.Since(start)
		if !again {
			return Result{}, pe
		}
		d := wait
		// ±20%, so that many jobs failing at once do not retry in step.
		d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
		if retryAfter > d {
			d = retryAfter
		}
		if time.Now().Add(d).After(deadline) || ctx.Err() != nil {
			pe.Retried = true
			return Result{}, pe
		}
		if o.Retrying != nil {
			o.Retrying(pe, d)
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			pe.Retried = true
			pe.Elapsed = time.Since(start)
			return Result{}, pe
		}
		wait = min(2*wait, 16*time.Second)
	}
}

// post makes one attempt. again says whether a failure may be retried;
// retryAfter is the wait the server asked for.
func post(ctx context.Context, client *http.Client, payload []byte, o Options) (res Result, again bool, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(payload))
	if err != nil {
		return res, false, 0, err
	}
	for k, vs := range o.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set(DevelopmentVersionHeader, DevelopmentVersion)
	if !o.NoGzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if o.UserAgent != "" && req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", o.UserAgent)
	}
	resp, err := client.Do(req)
	if err != nil {
		return res, retryableConnError(err), 0, &Error{Message: connError(err)}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		rejected, msg := partialSuccess(resp.Header.Get("Content-Type"), data)
		if rejected > 0 {
			return res, false, 0, &Error{Status: resp.StatusCode, Message: msg, Rejected: rejected}
		}
		res.Warning = msg
		return res, false, 0, nil
	}
	e := &Error{Status: resp.StatusCode, Message: statusMessage(resp.Header.Get("Content-Type"), data)}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests,
		resp.StatusCode/100 == 5 && resp.StatusCode != http.StatusNotImplemented && resp.StatusCode != http.StatusHTTPVersionNotSupported:
		return res, true, parseRetryAfter(resp.Header.Get("Retry-After")), e
	}
	return res, false, 0, e
}

// connError words a failed request without the "Post URL:" prefix the
// error message already has.
func connError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// retryableConnError says whether a request that got no answer is worth
// trying again: not when the certificate is wrong, which time does not
// mend.
func retryableConnError(err error) bool {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		recordHdr tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid),
		errors.As(err, &verify), errors.As(err, &recordHdr):
		return false
	}
	return true
}

func parseRetryAfter(s string) time.Duration {
	if s == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(s); err == nil {
		return time.Until(t)
	}
	return 0
}

// statusMessage reads what a collector says when it refuses a request: a
// google.rpc.Status in protobuf (OTLP/HTTP's rule) or JSON, else the text
// of the body, on one line.
func statusMessage(contentType string, body []byte) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/x-protobuf", "application/protobuf":
		if msg, ok := protoString(body, 2); ok {
			return msg
		}
	case "application/json":
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &st) == nil && st.Message != "" {
			return st.Message
		}
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// partialSuccess reads an ExportProfilesServiceResponse's partial_success
// (field 1: rejected_profiles = 1, error_message = 2).
func partialSuccess(contentType string, body []byte) (rejected int64, msg string) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/json" {
		var r struct {
			PartialSuccess struct {
				Rejected json.Number `json:"rejectedProfiles"`
				Message  string      `json:"errorMessage"`
			} `json:"partialSuccess"`
		}
		if json.Unmarshal(body, &r) == nil {
			n, _ := r.PartialSuccess.Rejected.Int64()
			return n, r.PartialSuccess.Message
		}
		return 0, ""
	}
	ps, ok := protoField(body, 1)
	if !ok {
		return 0, ""
	}
	if v, ok := protoField(ps, 1); ok {
		n, _ := readVarint(v)
		rejected = int64(n)
	}
	if v, ok := protoField(ps, 2); ok {
		msg = string(v)
	}
	return rejected, msg
}

func protoString(b []byte, num uint64) (string, bool) {
	v, ok := protoField(b, num)
	return string(v), ok && len(v) > 0
}

// protoField returns the last field num of message b: a length-delimited
// field's bytes, or a varint's own bytes. It reads what a collector
// answers, so it stops at anything malformed.
func protoField(b []byte, num uint64) (out []byte, found bool) {
	for len(b) > 0 {
		key, n := readVarint(b)
		if n == 0 {
			return out, found
		}
		b = b[n:]
		var v []byte
		switch key & 7 {
		case 0: // varint
			_, n = readVarint(b)
			if n == 0 {
				return out, found
			}
			v, b = b[:n], b[n:]
		case 1: // fixed64
			if len(b) < 8 {
				return out, found
			}
			v, b = b[:8], b[8:]
		case 2: // length-delimited
			l, n := readVarint(b)
			if n == 0 || l > uint64(len(b)-n) {
				return out, found
			}
			v, b = b[n:n+int(l)], b[n+int(l):]
		case 5: // fixed32
			if len(b) < 4 {
				return out, found
			}
			v, b = b[:4], b[4:]
		default:
			return out, found
		}
		if key>>3 == num {
			out, found = v, true
		}
	}
	return out, found
}

// readVarint decodes a varint; n is 0 when b does not hold one.
func readVarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
