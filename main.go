// Command gprof is a sampling profiler that writes Firefox Profiler profiles.
package main

import (
	"os"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/cmd"
)

func main() {
	// When gprof launches a command it re-executes itself as a small helper
	// that waits until sampling is armed, then execs the command. This
	// returns at once unless this process is that helper.
	attach.ExecHelperMain()
	os.Exit(cmd.Main(os.Args))
}
