package view

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// DefaultPort is the first port Listen tries when none is given; it tries
// PortTries ports from there.
const (
	DefaultPort = 3000
	PortTries   = 100
)

// DefaultProfilerURL is the Firefox Profiler front-end.
const DefaultProfilerURL = "https://profiler.firefox.com"

// IsLoopback says whether host (a name or an IP) only accepts connections
// from this machine.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Listen listens on address (a host name or IP) and port, or when port is
// 0, on the first free port of DefaultPort and the PortTries after it.
// Other machines could reach a server on an address that is not loopback,
// so that needs allowRemote.
func Listen(address string, port int, allowRemote bool) (net.Listener, error) {
	if !IsLoopback(address) && !allowRemote {
		return nil, fmt.Errorf("refusing to serve on %s, which other machines can reach: anyone with the URL could read the profile and its source files; use --allow-remote to do it anyway, or keep the default 127.0.0.1 and forward the port with ssh -L", address)
	}
	if port != 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("cannot listen on %s port %d: %v; choose another --port, or none for the first free one", address, port, errors.Unwrap(err))
		}
		return l, nil
	}
	var last error
	for p := DefaultPort; p < DefaultPort+PortTries; p++ {
		l, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(p)))
		if err == nil {
			return l, nil
		}
		last = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, fmt.Errorf("cannot listen on %s: %v; choose a --port", address, last)
}

// URLs are the addresses a server is reached at.
type URLs struct {
	SymbolServer string // http://HOST:PORT/TOKEN
	Profile      string // SymbolServer + "/profile.json"
	Open         string // the front-end loading Profile with SymbolServer
}

// MakeURLs returns the URLs of a server listening at addr with token, for
// the front-end at profilerURL. An unspecified address (0.0.0.0, ::) is
// named as loopback, which also reaches it and which the front-end trusts
// as a symbol server.
func MakeURLs(addr net.Addr, token, profilerURL string) URLs {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	base := "http://" + net.JoinHostPort(host, port) + "/" + token
	profile := base + "/profile.json"
	front := strings.TrimRight(profilerURL, "/")
	return URLs{
		SymbolServer: base,
		Profile:      profile,
		Open:         front + "/from-url/" + url.QueryEscape(profile) + "/?symbolServer=" + url.QueryEscape(base),
	}
}
