package view

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
)

// ErrNoDisplay is returned by OpenBrowser where no browser can show a page.
var ErrNoDisplay = errors.New("no display to open a browser on")

// HasDisplay says whether a browser started here could show a window: on
// Linux and the BSDs only with an X11 or Wayland display (an ssh session
// usually has neither); macOS and Windows always have one.
func HasDisplay() bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// OpenBrowser opens url in the user's browser, without waiting for it.
func OpenBrowser(url string) error {
	if !HasDisplay() {
		return ErrNoDisplay
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	// Reap it when it exits; xdg-open returns once the browser has it.
	go cmd.Wait()
	return nil
}
