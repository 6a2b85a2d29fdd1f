// Package remote fetches debug files this machine lacks from the servers
// that keep them by identity, and caches them on disk: debuginfod servers
// (ELF debug information and executables by GNU build-id, as elfutils'
// client asks: URL/buildid/HEX/debuginfo) and symbol servers (PDBs by name,
// GUID and age, in the layout of Microsoft's: URL/NAME/ID/NAME).
//
// A server that cannot be reached (refused, timed out, a broken answer)
// is tried once per run: a Client remembers it and asks the next server,
// or gives up, for every later file. A server that answers "not found"
// is asked again for other files. Downloads go to a temporary file in the
// cache, are checked by the caller (the right build) and only then take
// their place, so the cache never holds half a file or another build's.
package remote

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout bounds connecting to a server and its silence, both
// before it answers and in the middle of a transfer.
const DefaultTimeout = 5 * time.Second

// maxFile bounds one download: the largest debug files (a browser's) are
// a few gigabytes.
const maxFile = 8 << 30

// Config says which servers to ask and where to keep what they send.
type Config struct {
	// Debuginfod are debuginfod servers' base URLs, asked in order.
	Debuginfod []string
	// SymbolServers are PDB symbol servers' base URLs, asked in order.
	SymbolServers []string
	// DebuginfodCache is where debuginfod files are kept, in the layout
	// of elfutils' client (DIR/HEX/debuginfo), so that both share it; ""
	// means DefaultDebuginfodCache.
	DebuginfodCache string
	// SymbolCache is where PDBs are kept, in a symbol server's layout
	// (DIR/NAME/ID/NAME); "" means DefaultSymbolCache.
	SymbolCache string
	// Timeout bounds connecting and each silence of a server; 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

// DefaultDebuginfodCache is elfutils' client cache:
// $DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client, else
// ~/.cache/debuginfod_client.
func DefaultDebuginfodCache() string {
	if p := os.Getenv("DEBUGINFOD_CACHE_PATH"); p != "" {
		return p
	}
	if p := os.Getenv("XDG_CACHE_HOME"); p != "" {
		return filepath.Join(p, "debuginfod_client")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "debuginfod_client")
	}
	return ""
}

// DefaultSymbolCache is os.UserCacheDir()/gprof/symbols.
func DefaultSymbolCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "gprof", "symbols")
	}
	return ""
}

// EnvDebuginfodURLs returns the servers $DEBUGINFOD_URLS names
// (space-separated, as elfutils reads it).
func EnvDebuginfodURLs() []string { return strings.Fields(os.Getenv("DEBUGINFOD_URLS")) }

// EnvTimeout returns $DEBUGINFOD_TIMEOUT (seconds), or 0.
func EnvTimeout() time.Duration {
	s, err := strconv.Atoi(os.Getenv("DEBUGINFOD_TIMEOUT"))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// Fetched is one file a server sent.
type Fetched struct {
	URL   string
	Path  string // where it is cached
	Bytes int64
}

// Client fetches and caches files. Its methods are safe for concurrent
// use; the same file asked for twice at once is fetched once.
type Client struct {
	cfg  Config
	http *http.Client

	mu       sync.Mutex
	down     map[string]error // servers that failed this run, and why
	inflight map[string]*call
	fetched  []Fetched
}

type call struct {
	done chan struct{}
	path string
	err  error
}

// New returns a Client for cfg, or nil when cfg names no server.
func New(cfg Config) *Client {
	if len(cfg.Debuginfod) == 0 && len(cfg.SymbolServers) == 0 {
		return nil
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.DebuginfodCache == "" {
		cfg.DebuginfodCache = DefaultDebuginfodCache()
	}
	if cfg.SymbolCache == "" {
		cfg.SymbolCache = DefaultSymbolCache()
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: cfg.Timeout}).DialContext,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConnsPerHost:   4,
	}
	return &Client{
		cfg:      cfg,
		http:     &http.Client{Transport: tr},
		down:     make(map[string]error),
		inflight: make(map[string]*call),
	}
}

// Verify checks a downloaded file (at a temporary path) before it is
// cached: nil if it is the file asked for.
type Verify func(path string) error

// ErrNotFound says that no server has the file.
var ErrNotFound = errors.New("no server has it")

// DebugInfo returns the path of the debug file of the ELF build buildID,
// from the cache or fetched from a debuginfod server.
func (c *Client) DebugInfo(buildID []byte, verify Verify) (string, error) {
	return c.debuginfod(buildID, "debuginfo", verify)
}

// Executable returns the path of the ELF file of build buildID, from the
// cache or fetched from a debuginfod server.
func (c *Client) Executable(buildID []byte, verify Verify) (string, error) {
	return c.debuginfod(buildID, "executable", verify)
}

func (c *Client) debuginfod(buildID []byte, kind string, verify Verify) (string, error) {
	if c == nil || len(c.cfg.Debuginfod) == 0 || len(buildID) == 0 || c.cfg.DebuginfodCache == "" {
		return "", ErrNotFound
	}
	id := hex.EncodeToString(buildID)
	local := filepath.Join(c.cfg.DebuginfodCache, id, kind)
	return c.get(local, c.cfg.Debuginfod, "buildid/"+id+"/"+kind, verify)
}

// PDB returns the path of the PDB called name (its base name, e.g.
// ntdll.pdb) with id, the GUID in hex without dashes followed by the age
// in hex, from the cache or fetched from a symbol server.
func (c *Client) PDB(name, id string, verify Verify) (string, error) {
	if c == nil || len(c.cfg.SymbolServers) == 0 || c.cfg.SymbolCache == "" {
		return "", ErrNotFound
	}
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." || !isHex(id) {
		return "", fmt.Errorf("no PDB name and ID to ask a symbol server for (%q, %q)", name, id)
	}
	// Symbol servers file IDs in upper case (SymStore does), and so
	// does the cache.
	id = strings.ToUpper(id)
	local := filepath.Join(c.cfg.SymbolCache, name, id, name)
	return c.get(local, c.cfg.SymbolServers, name+"/"+id+"/"+name, verify)
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// get returns local if it is cached, else fetches rel from the first of
// servers that has it into local.
func (c *Client) get(local string, servers []string, rel string, verify Verify) (string, error) {
	if st, err := os.Stat(local); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		// elfutils' client leaves an empty file for a file no server had;
		// anything else there was checked when it was cached.
		return local, nil
	}
	c.mu.Lock()
	if cl := c.inflight[local]; cl != nil {
		c.mu.Unlock()
		<-cl.done
		return cl.path, cl.err
	}
	cl := &call{done: make(chan struct{})}
	c.inflight[local] = cl
	c.mu.Unlock()

	cl.path, cl.err = c.fetchFirst(local, servers, rel, verify)
	close(cl.done)
	return cl.path, cl.err
}

func (c *Client) fetchFirst(local string, servers []string, rel string, verify Verify) (string, error) {
	var errs []string
	for _, s := range servers {
		c.mu.Lock()
		downErr := c.down[s]
		c.mu.Unlock()
		if downErr != nil {
			continue
		}
		u := strings.TrimSuffix(s, "/") + "/" + rel
		n, err := c.fetch(u, local, verify)
		if err == nil {
			c.mu.Lock()
			c.fetched = append(c.fetched, Fetched{URL: u, Path: local, Bytes: n})
			c.mu.Unlock()
			return local, nil
		}
		var nf notFound
		if errors.As(err, &nf) {
			continue
		}
		var bad badFile
		if errors.As(err, &bad) {
			errs = append(errs, err.Error())
			continue
		}
		// Unreachable, or broken: not asked again this run.
		c.mu.Lock()
		c.down[s] = err
		c.mu.Unlock()
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return "", errors.New(strings.Join(errs, "; "))
	}
	return "", ErrNotFound
}

type notFound struct{ status string }

func (e notFound) Error() string { return e.status }

type badFile struct{ err error }

func (e badFile) Error() string { return e.err.Error() }

// fetch downloads u into local, through a temporary file next to it that
// verify checks, and returns its size.
func (c *Client) fetch(u, local string, verify Verify) (int64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, badFile{err}
	}
	req.Header.Set("User-Agent", "gprof")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return 0, notFound{resp.Status}
	default:
		return 0, fmt.Errorf("%s: %s", u, resp.Status)
	}
	if resp.ContentLength > maxFile {
		return 0, badFile{fmt.Errorf("%s: %d bytes is more than a debug file", u, resp.ContentLength)}
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return 0, badFile{fmt.Errorf("cache: %w", err)}
	}
	tmp, err := os.CreateTemp(filepath.Dir(local), "."+filepath.Base(local)+".tmp-*")
	if err != nil {
		return 0, badFile{fmt.Errorf("cache: %w", err)}
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	// A transfer may take long, but not stall: each silence of the
	// server is bounded.
	watchdog := time.AfterFunc(c.cfg.Timeout, cancel)
	body := &stallReader{r: resp.Body, t: watchdog, d: c.cfg.Timeout}
	n, err := io.Copy(tmp, io.LimitReader(body, maxFile+1))
	watchdog.Stop()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("silent for %v", c.cfg.Timeout)
		}
		return 0, fmt.Errorf("%s: %w", u, err)
	}
	if n > maxFile {
		return 0, badFile{fmt.Errorf("%s: more than %d bytes", u, int64(maxFile))}
	}
	if verify != nil {
		if err := verify(tmp.Name()); err != nil {
			return 0, badFile{fmt.Errorf("%s: %w", u, err)}
		}
	}
	if err := os.Rename(tmp.Name(), local); err != nil {
		return 0, badFile{fmt.Errorf("cache: %w", err)}
	}
	return n, nil
}

// stallReader resets a watchdog at each read that brings data.
type stallReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.t.Reset(s.d)
	}
	return n, err
}

// Fetched returns the files fetched so far, in order.
func (c *Client) Fetched() []Fetched {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Fetched(nil), c.fetched...)
}

// Down returns the servers given up on this run, each with why, one line
// each.
func (c *Client) Down() []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for s, err := range c.down {
		out = append(out, fmt.Sprintf("%s: %v", s, err))
	}
	return out
}

// Summary says in one line what was fetched, or "" if nothing was.
func (c *Client) Summary() string {
	f := c.Fetched()
	if len(f) == 0 {
		return ""
	}
	var n int64
	names := make([]string, 0, len(f))
	for _, x := range f {
		n += x.Bytes
		names = append(names, x.URL)
	}
	what := "1 debug file"
	if len(f) > 1 {
		what = fmt.Sprintf("%d debug files", len(f))
	}
	return fmt.Sprintf("fetched %s (%s): %s", what, size(n), strings.Join(names, ", "))
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
