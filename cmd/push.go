package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/format/otlp"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/push"
)

// headersEnv are OpenTelemetry's standard variables for exporter headers
// ("name=value,name2=value2", values percent-encoded): a way to pass a
// token that does not show on the command line.
var headersEnv = []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_PROFILES_HEADERS"}

// otlpFlags are the flags that shape the OTLP request: push, record
// --push and convert --to otlp share them.
func otlpFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "service-name", Usage: "give every process the service.name `NAME` (default: each process's own name)"},
		&cli.StringSliceFlag{Name: "label", Usage: "add resource attribute `KEY=VALUE` to every process, e.g. vcs.ref.head.revision=$SHA (repeatable; replaces gprof's own of the same key)"},
	}
}

// sendFlags are the flags of the sending itself; timeout names the flag
// that bounds it.
func sendFlags(timeout string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "header", Usage: "send HTTP header `'NAME: VALUE'` (repeatable), e.g. 'Authorization: Bearer TOKEN'; also from $OTEL_EXPORTER_OTLP_HEADERS"},
		&cli.StringFlag{Name: "ca-file", Usage: "check an https collector's certificate against the certificate authorities in PEM `FILE` (default: the system's)"},
		&cli.BoolFlag{Name: "no-gzip", Usage: "send the request uncompressed"},
		&cli.StringFlag{Name: timeout, Value: "60s", Usage: "give up on a request after `DURATION`, retries included (retries follow connection errors, 429 and 5xx answers)"},
		&cli.StringFlag{Name: "max-request-size", Value: "8M", Usage: "split a profile into requests of at most `SIZE` (e.g. 4M; the Collector takes 20 MiB by default)"},
	}
}

func pushCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "endpoint", Usage: "the collector's OTLP/HTTP `URL`, e.g. http://localhost:4318 (/v1development/profiles is added when the URL has no path); required"},
	}
	flags = append(flags, otlpFlags()...)
	flags = append(flags, sendFlags("timeout")...)
	flags = append(flags,
		&cli.StringSliceFlag{Name: "symbol-dir", Usage: "also look for debug files in `DIR` (repeatable)"},
		debuginfodFlag, symbolServerFlag,
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
	)
	return &cli.Command{
		Name:      "push",
		Usage:     "send profiles to an OpenTelemetry Collector (OTLP profiles over HTTP)",
		ArgsUsage: "PROFILE...",
		Description: `Sends each PROFILE (any format gprof reads) to an OpenTelemetry Collector, or
a backend that takes OTLP, as an OTLP/HTTP profiles request (protobuf,
gzipped; the profiles/v1development signal, which the Collector accepts
with --feature-gates=+service.profilesSupport). Each process is a resource
(service.name, process.pid, process.executable.name, host.name, and the
--label attributes) with two profiles of its samples, samples/count and
cpu/nanoseconds, whose samples are stacks of one thread (thread.id,
thread.name) with their timestamps. Functions, files, lines and inline
frames come from the names stored in the profile (and for addresses it
has no name for, from the binaries on disk, as 'gprof convert' finds
them); mappings carry their binaries' build IDs. A profile whose request
would pass --max-request-size goes in several requests.

Nothing is lost to a collector that is down for a while: connection errors
and 429 and 5xx answers are tried again, waiting longer each time (0.5 s,
1 s, 2 s... or what the collector's Retry-After asks), until --timeout.
Then, or at any other answer (a 400 says what the collector said), gprof
prints one line per profile and exits 5. Input files are only read.

Exit codes: 0 every profile was accepted; 1 a PROFILE could not be read
(nothing was sent); 2 bad command line; 5 a profile was not delivered;
128+N aborted by signal N.

Examples:
   ./bin/gprof push --endpoint http://localhost:4318 profile.json.gz
   ./bin/gprof push --endpoint https://otel.example.com --header "Authorization: Bearer $TOKEN" \
       --service-name mybench --label vcs.ref.head.revision=$(git rev-parse HEAD) --label vcs.ref.head.name=main run*.json.gz`,
		Flags:  flags,
		Action: runPush,
	}
}

// pushTarget is what the flags say of where and how to push.
type pushTarget struct {
	send     push.Options
	otlp     otlp.Options
	maxBytes int
}

// otlpOptions reads --service-name and --label.
func otlpOptions(c *cli.Context) (otlp.Options, error) {
	o := otlp.Options{ServiceName: c.String("service-name"), Version: Version}
	for _, l := range c.StringSlice("label") {
		k, v, ok := strings.Cut(l, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return o, usagef("invalid --label %q: use KEY=VALUE, e.g. --label ci.branch=main", l)
		}
		o.Attributes = append(o.Attributes, otlp.Attribute{Key: k, Value: v})
	}
	return o, nil
}

// pushTargetFrom checks the flags of a push to endpoint, named by flag on
// the command line.
func pushTargetFrom(c *cli.Context, endpoint, flag, timeoutFlag string) (*pushTarget, error) {
	u, err := push.Endpoint(endpoint)
	if err != nil {
		return nil, usagef("invalid %s: %v", flag, err)
	}
	t := &pushTarget{send: push.Options{URL: u, Header: http.Header{}, NoGzip: c.Bool("no-gzip"), UserAgent: "gprof/" + Version}}
	if t.otlp, err = otlpOptions(c); err != nil {
		return nil, err
	}
	for _, env := range headersEnv {
		if err := envHeaders(t.send.Header, env, os.Getenv(env)); err != nil {
			return nil, err
		}
	}
	for _, h := range c.StringSlice("header") {
		name, value, err := push.ParseHeader(h)
		if err != nil {
			return nil, usagef("invalid --header: %v", err)
		}
		t.send.Header.Set(name, value)
	}
	if f := c.String("ca-file"); f != "" {
		if t.send.RootCAs, err = push.LoadCAs(f); err != nil {
			return nil, usagef("--ca-file: %v", err)
		}
	}
	d, err := time.ParseDuration(c.String(timeoutFlag))
	if err != nil || d < time.Second || d > 24*time.Hour {
		return nil, usagef("invalid --%s %q: use a duration from 1s to 24h, e.g. 2m", timeoutFlag, c.String(timeoutFlag))
	}
	t.send.Timeout = d
	n, err := parseSize(c.String("max-request-size"))
	if err != nil || n < 64<<10 || n > 1<<30 {
		return nil, usagef("invalid --max-request-size %q: use 64K to 1G, e.g. 4M", c.String("max-request-size"))
	}
	t.maxBytes = int(n)
	return t, nil
}

// envHeaders adds the headers of an OTEL_EXPORTER_OTLP_HEADERS value.
func envHeaders(h http.Header, env, val string) error {
	for _, kv := range strings.Split(val, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if ok {
			v, ok = unescape(strings.TrimSpace(v))
		}
		if !ok || k == "" {
			return usagef("$%s is not a list of name=value headers separated by commas", env)
		}
		h.Set(k, v)
	}
	return nil
}

func unescape(s string) (string, bool) {
	v, err := url.PathUnescape(s)
	return v, err == nil
}

// sendProfile pushes p, in as many requests as --max-request-size asks;
// say, unless nil, prints its notices (retries). It stops at the first
// request that fails for good.
func (t *pushTarget) sendProfile(ctx context.Context, p *profile.Profile, say func(string)) (push.Result, error) {
	parts := otlp.EncodeParts(p, t.otlp, t.maxBytes)
	o := t.send
	var total push.Result
	for i, body := range parts {
		which := ""
		if len(parts) > 1 {
			which = fmt.Sprintf(" (request %d of %d)", i+1, len(parts))
		}
		if say != nil {
			o.Retrying = func(err error, wait time.Duration) {
				say(fmt.Sprintf("gprof: %v%s; trying again in %s", err, which, wait.Round(100*time.Millisecond)))
			}
		}
		res, err := push.Send(ctx, body, o)
		total.Attempts += res.Attempts
		if err != nil {
			if i > 0 {
				return total, fmt.Errorf("%w; %d of the %d requests of this profile were delivered", err, i, len(parts))
			}
			return total, err
		}
		if res.Warning != "" && say != nil {
			say("gprof: the collector accepted the profile" + which + ", and says: " + res.Warning)
		}
	}
	total.Requests = len(parts)
	return total, nil
}

// sayUnlessQuiet is the notice printer of a command: ph's, or none.
func sayUnlessQuiet(ph *phases, quiet bool) func(string) {
	if quiet {
		return nil
	}
	return ph.println
}

func runPush(c *cli.Context) error {
	if c.String("endpoint") == "" {
		return usagef("give the collector's URL with --endpoint, e.g. 'gprof push --endpoint http://localhost:4318 profile.json.gz'")
	}
	t, err := pushTargetFrom(c, c.String("endpoint"), "--endpoint", "timeout")
	if err != nil {
		return err
	}
	files := c.Args().Slice()
	if len(files) == 0 {
		return usagef("give the profiles to push, e.g. 'gprof push --endpoint %s profile.json.gz'", c.String("endpoint"))
	}
	if err := checkSymbolDirs(c); err != nil {
		return err
	}
	quiet := c.Bool("quiet")
	_, sigs := catchSignals(c.Context, false)
	defer sigs.release()
	ph := newPhases(os.Stderr, quiet)
	sigs.onAbort(ph.done)
	defer ph.done()

	// Every file is read before anything is sent: a bad one fails the
	// command (exit 1) without a partial push.
	rc, err := remoteClient(c)
	if err != nil {
		return err
	}
	profiles := make([]*profile.Profile, len(files))
	for i, f := range files {
		ph.set("reading " + inName(f))
		p, _, err := readProfile(f)
		if err != nil {
			return err
		}
		ph.set("resolving names")
		printNotices(fillSymbols(p, c.StringSlice("symbol-dir"), rc))
		profiles[i] = p
	}
	ph.done()
	failed := 0
	for i, p := range profiles {
		// A line of its own per file: a closed one is not drawn again.
		fph := newPhases(os.Stderr, quiet)
		sigs.onAbort(fph.done)
		fph.set("pushing " + inName(files[i]))
		res, err := t.sendProfile(c.Context, p, sayUnlessQuiet(fph, quiet))
		fph.done()
		if err != nil {
			failed++
			var pe *push.Error
			if !errors.As(err, &pe) {
				return err
			}
			fmt.Fprintf(os.Stderr, "%s %s not pushed: %v\n", errorPrefix(os.Stderr), inName(files[i]), err)
			continue
		}
		if !quiet {
			fmt.Fprintf(os.Stderr, "gprof: pushed %s to %s (%s", inName(files[i]), t.send.URL, plural(processesWithSamples(p), "process"))
			if res.Requests > 1 {
				fmt.Fprintf(os.Stderr, ", in %d requests", res.Requests)
			}
			switch n := res.Attempts - res.Requests; {
			case n == 1:
				fmt.Fprint(os.Stderr, ", after 1 retry")
			case n > 1:
				fmt.Fprintf(os.Stderr, ", after %d retries", n)
			}
			fmt.Fprintln(os.Stderr, ")")
		}
	}
	if failed > 0 {
		return exitCodeError{ExitPushFailed}
	}
	return nil
}

// processesWithSamples counts the resources a push of p sends.
func processesWithSamples(p *profile.Profile) int {
	n := 0
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		for _, th := range pr.Threads {
			if th != nil && th.Samples.Len() > 0 {
				n++
				break
			}
		}
	}
	return n
}
