// Package view serves a profile to the Firefox Profiler front-end together
// with a symbol server for it, so the front-end shows names for a Gecko
// profile with no conversion step.
//
// Everything is served under a secret random token, the first path
// segment: /TOKEN/profile.json (the profile), and the POST APIs the
// front-end calls on a symbol server, /TOKEN/symbolicate/v5 (Tecken's v5
// API), /TOKEN/source/v1 and /TOKEN/asm/v1 (samply's source and assembly
// APIs). Any other path, a missing or wrong token included, is 404 with no
// CORS headers, so other web pages the user visits learn nothing.
//
// Names come from those stored in the profile first, and for an address
// the profile has no name for, from the binary on this machine with the
// same build identity (at the path the profile recorded, or under one of
// the symbol directories).
package view

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
)

// maxBody bounds a request body: the front-end sends every address of a
// profile in one v5 request, a few MB for the largest.
const maxBody = 64 << 20

// Config is what a Server serves.
type Config struct {
	// Profile is the loaded profile: its stored names and its libraries,
	// which say where binaries were.
	Profile *profile.Profile
	// Data is the file served as /TOKEN/profile.json: JSON the front-end
	// imports (gzipped or not; the front-end sniffs gzip itself).
	Data []byte
	// SymbolDirs are searched for binaries (by name) and debug files.
	SymbolDirs []string
	// Token is the secret path prefix; empty means a random one.
	Token string
	// Kallsyms loads the running kernel's symbols, for kernel frames the
	// profile has no names for; nil reads /proc/kallsyms.
	Kallsyms func() (*symbolize.Kallsyms, error)
	// KernelBreakpadID returns the running kernel's identity, which must
	// be the profile's for Kallsyms to apply; nil reads /sys/kernel/notes.
	KernelBreakpadID func() (string, error)
}

// Server answers the front-end's requests. It is an http.Handler.
type Server struct {
	token   string
	data    []byte
	gzipped bool
	syms    *profile.SymbolTable
	libs    map[profile.LibKey][]profile.Lib
	roles   map[profile.LibKey]roles
	// funcFiles is profile.SymbolTable.FuncFiles of each lib of syms, so
	// that the front-end, which makes one function per name and file,
	// makes one per function.
	funcFiles  map[profile.LibKey]map[string]string
	symbolDirs []string

	mu   sync.Mutex
	bins map[profile.LibKey]*binary

	kernel           func() (*symbolize.Kallsyms, error) // loads once
	kernelBreakpadID func() (string, error)              // reads once
}

type binary struct {
	b   *symbolize.Binary // nil if none could be opened
	err error

	unitsOnce sync.Once
	units     []compUnit
}

// compDir returns the compilation directory of lib-relative address rel,
// or "".
func (b *binary) compDir(rel uint64) string {
	if b.b == nil {
		return ""
	}
	b.unitsOnce.Do(func() { b.units = compDirs(b.b) })
	return compDir(b.units, b.b.Object().Identity().Base+rel)
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Profile == nil {
		return nil, errors.New("view: no profile")
	}
	tok := cfg.Token
	if tok == "" {
		var err error
		if tok, err = NewToken(); err != nil {
			return nil, err
		}
	}
	s := &Server{
		token:      tok,
		data:       cfg.Data,
		gzipped:    len(cfg.Data) >= 2 && cfg.Data[0] == 0x1f && cfg.Data[1] == 0x8b,
		syms:       cfg.Profile.Symbols,
		libs:       make(map[profile.LibKey][]profile.Lib),
		symbolDirs: cfg.SymbolDirs,
		bins:       make(map[profile.LibKey]*binary),
	}
	for _, p := range cfg.Profile.Processes {
		for _, l := range p.Libs {
			s.libs[l.Key()] = append(s.libs[l.Key()], l)
		}
	}
	s.roles = frameRoles(cfg.Profile)
	if s.syms != nil {
		s.funcFiles = make(map[profile.LibKey]map[string]string, len(s.syms.Libs))
		for k := range s.syms.Libs {
			s.funcFiles[k] = s.syms.FuncFiles(k)
		}
	}
	load := cfg.Kallsyms
	if load == nil {
		load = symbolize.LoadKallsyms
	}
	s.kernel = sync.OnceValues(load)
	kid := cfg.KernelBreakpadID
	if kid == nil {
		kid = runningKernelBreakpadID
	}
	s.kernelBreakpadID = sync.OnceValues(kid)
	return s, nil
}

// NewToken returns a fresh secret: 120 random bits, in lowercase base32
// so it is safe in a URL path unescaped.
func NewToken() (string, error) {
	b := make([]byte, 15)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("view: no randomness for the secret token: %v", err)
	}
	return strings.ToLower(base32.StdEncoding.EncodeToString(b)), nil
}

// Token returns the secret path prefix.
func (s *Server) Token() string { return s.token }

// Close releases the binaries opened to answer requests.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, b := range s.bins {
		if b.b != nil {
			b.b.Close()
		}
		delete(s.bins, k)
	}
	return nil
}

// ServeHTTP routes /TOKEN/... requests; see the package comment.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := s.strip(r.URL.Path)
	if !ok {
		// No CORS headers: a page on another origin cannot even tell
		// that the server exists.
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodOptions {
		preflight(w, r)
		return
	}
	switch rest {
	case "/profile.json":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD, OPTIONS")
			return
		}
		if s.gzipped {
			h.Set("Content-Type", "application/gzip")
		} else {
			h.Set("Content-Type", "application/json; charset=UTF-8")
		}
		h.Set("Cache-Control", "no-store")
		http.ServeContent(w, r, "profile.json", zeroTime, bytes.NewReader(s.data))
	case "/symbolicate/v5", "/source/v1", "/asm/v1":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST, OPTIONS")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			jsonError(w, http.StatusRequestEntityTooLarge, "request body too large or unreadable")
			return
		}
		var resp any
		var status int
		switch rest {
		case "/symbolicate/v5":
			resp, status, err = s.symbolicate(body)
		case "/source/v1":
			resp, status, err = s.source(body)
		default:
			resp, status, err = s.asm(body)
		}
		if err != nil {
			jsonError(w, status, err.Error())
			return
		}
		h.Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	default:
		http.NotFound(w, r)
	}
}

// strip returns the path after /TOKEN, comparing the token in constant
// time.
func (s *Server) strip(path string) (string, bool) {
	if !strings.HasPrefix(path, "/") {
		return "", false
	}
	tok, rest, _ := strings.Cut(path[1:], "/")
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return "", false
	}
	return "/" + rest, true
}

// allowedHeaders are the request headers the front-end sets on its
// symbol-server fetches: a Content-Type, and in Firefox a User-Agent
// naming the profiler, which makes the request need a preflight.
var allowedHeaders = []string{"content-type", "user-agent"}

// preflight answers OPTIONS: a CORS preflight allows the methods the
// front-end uses and of the headers it asked for only those the front-end
// sends; a plain OPTIONS lists the methods.
func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if r.Header.Get("Access-Control-Request-Method") == "" {
		h.Set("Allow", "GET, POST, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	var ok []string
	for _, f := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		for _, a := range allowedHeaders {
			if f == a {
				ok = append(ok, a)
			}
		}
	}
	if len(ok) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(ok, ", "))
	}
	// Chrome's Private Network Access asks whether a public page (the
	// front-end) may reach this loopback server; it is what we serve for.
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	jsonError(w, http.StatusMethodNotAllowed, "method not allowed")
}

func jsonError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// zeroTime makes http.ServeContent send no Last-Modified.
var zeroTime time.Time
