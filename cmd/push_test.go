package cmd

import (
	"net/http"
	"strings"
	"testing"
)

func TestEnvHeaders(t *testing.T) {
	h := http.Header{}
	if err := envHeaders(h, "X", "Authorization=Bearer%20tok%2Cen , x-scope-orgid=team-a,"); err != nil {
		t.Fatal(err)
	}
	if h.Get("Authorization") != "Bearer tok,en" || h.Get("X-Scope-Orgid") != "team-a" {
		t.Errorf("headers %v", h)
	}
	for _, bad := range []string{"novalue", "=v", "a=%zz"} {
		if err := envHeaders(http.Header{}, "X", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestPushUsage: mistakes on the command line are exit 2 with a line that
// says what to do, before anything is read or sent.
func TestPushUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"push", "p.json"}, "--endpoint"},
		{[]string{"push", "--endpoint", "localhost:4318", "p.json"}, "http://"},
		{[]string{"push", "--endpoint", "http://localhost:4318"}, "give the profiles"},
		{[]string{"push", "--endpoint", "http://localhost:4318", "--label", "x", "p.json"}, "KEY=VALUE"},
		{[]string{"push", "--endpoint", "http://localhost:4318", "--header", "x", "p.json"}, "Name: value"},
		{[]string{"push", "--endpoint", "http://localhost:4318", "--ca-file", "/nonexistent", "p.json"}, "--ca-file"},
		{[]string{"push", "--endpoint", "http://localhost:4318", "--timeout", "1ms", "p.json"}, "--timeout"},
		{[]string{"convert", "--to", "pprof", "--label", "a=b", "p.json", "-o", "x"}, "--to otlp"},
		{[]string{"record", "--header", "A: b", "--", "true"}, "--push"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("gprof %s: exit %d, stderr %q; want exit 2 mentioning %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}
