package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/format/processed"
	"github.com/gprof-dev/gprof/symbolize/remote"
	"github.com/gprof-dev/gprof/view"
)

// profilerURLEnv names a self-hosted front-end, for networks that cannot
// reach profiler.firefox.com.
const profilerURLEnv = "GPROF_PROFILER_URL"

func viewCommand() *cli.Command {
	return &cli.Command{
		Name:      "view",
		Usage:     "open a profile in the Firefox Profiler, with names, from a local server",
		ArgsUsage: "PROFILE",
		Description: `Serves PROFILE and a symbol server for it on a loopback address, and opens
the Firefox Profiler on it in the browser. The front-end gets function names,
inline frames, source files and the assembly of functions from gprof: names
stored in the profile first, then the binaries and debug files on this
machine (--symbol-dir). PROFILE may be in any format gprof reads.

gprof serves until Ctrl-C. Every URL holds a secret random token; without it
nothing is served. Source files are served only if the profile's debug info
names them.

With --no-open, or where there is no display (an ssh session), it prints
the URL on standard output instead of opening a browser; forward the port
to open it from another machine (the hint says how).

To share a profile or upload it, write a self-contained file with names
applied instead: 'gprof convert PROFILE -o processed.json.gz'.

Examples:
   ./bin/gprof view profile.json.gz
   ./bin/gprof view --no-open --port 3000 profile.json.gz   # on a remote machine
   GPROF_PROFILER_URL=http://profiler.internal ./bin/gprof view profile.json.gz`,
		Flags: viewFlags(),
		Action: func(c *cli.Context) error {
			in, err := oneInput(c)
			if err != nil {
				return err
			}
			o, err := viewOptionsFrom(c)
			if err != nil {
				return err
			}
			return serveProfile(c.Context, in, o)
		},
	}
}

func viewFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "no-open", Usage: "print the URL on standard output instead of opening a browser"},
		&cli.StringFlag{Name: "address", Value: "127.0.0.1", Usage: "serve on `ADDRESS` (a loopback address unless --allow-remote)"},
		&cli.IntFlag{Name: "port", Usage: "serve on `PORT`", DefaultText: fmt.Sprintf("the first free one from %d", view.DefaultPort)},
		&cli.BoolFlag{Name: "allow-remote", Usage: "allow an --address other machines can reach (anyone with the URL can then read the profile and its sources)"},
		&cli.StringFlag{Name: "profiler-url", Value: view.DefaultProfilerURL, EnvVars: []string{profilerURLEnv}, Usage: "the Firefox Profiler front-end at `URL` (a self-hosted one for air-gapped networks; also $" + profilerURLEnv + ")"},
		&cli.StringSliceFlag{Name: "symbol-dir", Usage: "also look for binaries (by file name) and their debug files in `DIR` (repeatable)"},
		debuginfodFlag, symbolServerFlag,
	}
}

type viewOptions struct {
	noOpen, allowRemote bool
	quiet               bool // record -q: only errors on stderr
	address             string
	port                int
	profilerURL         string
	symbolDirs          []string
	remote              *remote.Client
}

func viewOptionsFrom(c *cli.Context) (viewOptions, error) {
	o := viewOptions{
		noOpen: c.Bool("no-open"), allowRemote: c.Bool("allow-remote"),
		address: c.String("address"), port: c.Int("port"),
		profilerURL: c.String("profiler-url"), symbolDirs: c.StringSlice("symbol-dir"),
	}
	rc, err := remoteClient(c)
	if err != nil {
		return o, err
	}
	o.remote = rc
	if o.port < 0 || o.port > 65535 {
		return o, usagef("invalid --port %d: give 1-65535, or none for the first free one", o.port)
	}
	if o.address == "" {
		return o, usagef("--address needs an address, e.g. 127.0.0.1")
	}
	if !view.IsLoopback(o.address) && !o.allowRemote {
		return o, usagef("--address %s can be reached from other machines, and anyone with the URL could read the profile and its source files: add --allow-remote to do it anyway, or keep 127.0.0.1 and forward the port with ssh -L", o.address)
	}
	return o, nil
}

// serveProfile serves the profile at path until a signal.
func serveProfile(ctx context.Context, path string, o viewOptions) error {
	if path == "-" {
		return usagef("gprof view serves a file: give its name, not -")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%s does not exist", path)
		}
		if st, serr := os.Stat(path); serr == nil && st.IsDir() {
			return usagef("%s is a directory: give the profile file in it (gprof view %s)", path, filepath.Join(path, "profile.json.gz"))
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot read %s: %v", path, err)
	}
	// Read it all before serving: a bad profile is an error here, not a
	// broken page in the browser.
	p, kind, err := format.Reader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("cannot read profile %s: %v", path, err)
	}
	// Resolve what the profile has no names for now, as report and
	// convert do, so that the server answers every address from one table
	// and names frames exactly as they do (a user frame under kernel
	// frames is looked up as the symbolizer decides, not as a return
	// address the front-end guesses).
	notes := fillSymbols(p, o.symbolDirs, o.remote)
	if !o.quiet {
		printNotices(append(notes, remoteNotes(o.remote)...))
	}
	if kind != format.Gecko && kind != format.Processed {
		// The front-end does not read this format: serve it in the
		// processed format, names applied, which also keeps sample
		// weights (pprof's are aggregated) that Gecko's front-end import
		// ignores.
		var buf bytes.Buffer
		if err := processed.Write(&buf, p); err != nil {
			return fmt.Errorf("cannot convert %s for the front-end: %v", path, err)
		}
		data = buf.Bytes()
	}
	srv, err := view.New(view.Config{Profile: p, Data: data, SymbolDirs: o.symbolDirs})
	if err != nil {
		return err
	}
	defer srv.Close()
	l, err := view.Listen(o.address, o.port, o.allowRemote)
	if err != nil {
		return err
	}
	urls := view.MakeURLs(l.Addr(), srv.Token(), o.profilerURL)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	var info io.Writer = os.Stderr
	if o.quiet {
		info = io.Discard
	}
	announce(os.Stdout, info, path, l.Addr(), urls, o)

	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("server stopped: %v", err)
	}
	fmt.Fprintln(info, "gprof: stopped serving")
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return nil
}

// announce opens the browser, or prints the URL where it cannot or should
// not, and says how to stop.
func announce(stdout, stderr io.Writer, path string, addr net.Addr, urls view.URLs, o viewOptions) {
	host, port, _ := net.SplitHostPort(addr.String())
	if !view.IsLoopback(host) {
		fmt.Fprintf(stderr, "gprof: warning: serving on %s, which other machines can reach; the URL's token is all that protects the profile and its source files\n", host)
	}
	opened := false
	if !o.noOpen && view.HasDisplay() {
		if err := view.OpenBrowser(urls.Open); err != nil {
			fmt.Fprintf(stderr, "gprof: cannot open a browser (%v); open the URL gprof prints\n", err)
		} else {
			opened = true
			fmt.Fprintf(stderr, "gprof: opened %s in the browser\n", path)
		}
	}
	if !opened {
		fmt.Fprintln(stdout, urls.Open)
	}
	if !opened && !view.HasDisplay() {
		me, _ := os.Hostname()
		if me == "" {
			me = "HOST"
		}
		fmt.Fprintf(stderr, "gprof: no display here; to view from your own machine, forward the port there and open the URL in its browser:\n    ssh -L %s:127.0.0.1:%s %s\n", port, port, me)
	}
	fmt.Fprintf(stderr, "gprof: serving %s and its symbols on port %s; press Ctrl-C to stop\n", path, port)
}

// recordAndView is record's action: the recording, then with --view the
// profile served as gprof view serves it, with view's defaults.
func recordAndView(c *cli.Context) error {
	if !c.Bool("view") {
		return runRecord(c)
	}
	if c.String("output") == "-" {
		return usagef("--view serves the profile file: give -o a file name, not -")
	}
	err := runRecord(c)
	var ec exitCodeError
	if err != nil && !errors.As(err, &ec) {
		return err
	}
	o := viewOptions{address: "127.0.0.1", profilerURL: view.DefaultProfilerURL, symbolDirs: c.StringSlice("symbol-dir"), quiet: c.Bool("quiet")}
	if u := os.Getenv(profilerURLEnv); u != "" {
		o.profilerURL = u
	}
	if verr := serveProfile(c.Context, c.String("output"), o); verr != nil {
		return verr
	}
	return err
}
