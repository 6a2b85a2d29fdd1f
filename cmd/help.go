package cmd

import "github.com/urfave/cli/v2"

// helpCommand makes "gprof help [COMMAND]" print the help that --help
// prints. It replaces urfave/cli's own help command, which App hides from
// the command list (HideHelpCommand) and so does not register at all. It is
// hidden too: --help is the documented spelling.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the help of gprof or of one command",
		ArgsUsage: "[COMMAND]",
		Hidden:    true,
		// No --help and no help subcommand of its own: help on help is this.
		HideHelp: true,
		Action: func(c *cli.Context) error {
			switch c.NArg() {
			case 0:
				return cli.ShowAppHelp(c)
			case 1:
				name := c.Args().First()
				for _, cmd := range c.App.Commands {
					if cmd.HasName(name) {
						return cli.ShowCommandHelp(c, name)
					}
				}
				return usagef("unknown command '%s'", name)
			}
			return usagef("give at most one command, e.g. 'gprof help record'")
		},
	}
}
