package cmd

import (
	"errors"
	"fmt"
	"os"

	"github.com/gprof-dev/gprof/internal/macsign"
	"github.com/urfave/cli/v2"
)

func setupCommand() *cli.Command {
	return &cli.Command{
		Name:  "setup",
		Usage: "on macOS, sign gprof so it may attach to your own processes",
		Description: `On macOS a process that is not root may attach to another (gprof record -p,
and gprof record -- COMMAND, which attaches to the command it launches) only
if it is signed with the com.apple.security.cs.debugger entitlement. gprof
setup signs the gprof binary itself with it, ad hoc, for this machine only,
as 'samply setup' does:

   codesign --force --options runtime --sign - --entitlements PLIST GPROF

Run it again after each rebuild of gprof. Even so, macOS never lets gprof
attach to system binaries (System Integrity Protection) or to programs
signed with the hardened runtime without get-task-allow; gprof record says
so when that is why. On other systems there is nothing to set up.`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("setup takes no arguments")
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("cannot find gprof's own binary: %v", err)
			}
			say := func(s string) { fmt.Fprintln(c.App.ErrWriter, "gprof: "+s) }
			if err := macsign.Sign(exe, say); err != nil {
				if errors.Is(err, macsign.ErrNotMacOS) {
					fmt.Fprintln(c.App.Writer, err.Error())
					return nil
				}
				return err
			}
			fmt.Fprintf(c.App.Writer, "signed %s with com.apple.security.cs.debugger: gprof record -p PID now works on your own processes\n", exe)
			return nil
		},
	}
}
