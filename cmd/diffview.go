package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gprof-dev/gprof/analysis/diff"
	"github.com/gprof-dev/gprof/format/processed"
	"github.com/gprof-dev/gprof/view"
)

// serveComparison serves the first base and the first new profile, as
// gprof view serves one, and opens the Firefox Profiler's comparison view
// on them. The front-end's comparison does not symbolicate, so both go in
// the processed format with names applied.
func serveComparison(ctx context.Context, base, next diff.Input, o viewOptions) error {
	var (
		srvs   [2]*view.Server
		thread [2]int
	)
	for i, in := range []diff.Input{base, next} {
		var buf bytes.Buffer
		if err := processed.Write(&buf, in.Profile); err != nil {
			return fmt.Errorf("cannot convert %s for the front-end: %v", in.File, err)
		}
		thread[i] = busiestThread(buf.Bytes())
		s, err := view.New(view.Config{Profile: in.Profile, Data: buf.Bytes(), SymbolDirs: o.symbolDirs})
		if err != nil {
			return err
		}
		defer s.Close()
		srvs[i] = s
	}
	l, err := view.Listen(o.address, o.port, o.allowRemote)
	if err != nil {
		return err
	}
	// One port, two servers, each under its own secret token.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/"+srvs[1].Token()+"/") {
			srvs[1].ServeHTTP(w, r)
			return
		}
		srvs[0].ServeHTTP(w, r)
	})
	a := view.MakeURLs(l.Addr(), srvs[0].Token(), o.profilerURL)
	b := view.MakeURLs(l.Addr(), srvs[1].Token(), o.profilerURL)
	// Each side must name the thread to compare: the busiest one.
	compare := strings.TrimRight(o.profilerURL, "/") + "/compare/?profiles[]=" +
		url.QueryEscape(a.Open+"&thread="+strconv.Itoa(thread[0])) + "&profiles[]=" + url.QueryEscape(b.Open+"&thread="+strconv.Itoa(thread[1]))
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	announce(os.Stdout, os.Stderr, base.File+" and "+next.File, l.Addr(), view.URLs{Open: compare}, o)
	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("server stopped: %v", err)
	}
	fmt.Fprintln(os.Stderr, "gprof: stopped serving")
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return nil
}

// busiestThread returns the index, in a processed profile's threads array
// as the front-end numbers them, of the thread with the most samples.
func busiestThread(processedJSON []byte) int {
	var p struct {
		Threads []struct {
			Samples struct {
				Length int `json:"length"`
			} `json:"samples"`
		} `json:"threads"`
	}
	if json.Unmarshal(processedJSON, &p) != nil {
		return 0
	}
	best := 0
	for i, t := range p.Threads {
		if t.Samples.Length > p.Threads[best].Samples.Length {
			best = i
		}
	}
	return best
}
