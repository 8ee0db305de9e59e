package main

import (
	"strconv"

	"github.com/spf13/cobra"
)

// maintenanceCmd is `queenctl maintenance [on|off]`: read or switch the maintenance modes
// (docs/api/admin-api.md §9; operations.md §4.4).
func (a *app) maintenanceCmd() *cobra.Command {
	var pop bool
	cmd := &cobra.Command{
		Use:   "maintenance [on|off]",
		Short: "Show or switch push maintenance (pushes spooled) or, with --pop, pop maintenance",
		Long: `Without an argument, show both maintenance modes and the answering instance's spool.
'on' or 'off' switches push maintenance (every push goes to the file buffer, which drains in
order once it is off) or, with --pop, pop maintenance (every pop answers empty at once), on
every instance of the cluster within a second.`,
		Example: `  queenctl maintenance
  queenctl maintenance on
  queenctl maintenance off --pop`,
		Args:      nargs(0, 1),
		ValidArgs: []string{"on", "off"},
		RunE: a.run(func(args []string) int {
			m, err := a.c.Maintenance(a.ctx)
			if len(args) == 1 {
				if args[0] != "on" && args[0] != "off" {
					return a.usageError("want on or off, got %q", args[0])
				}
				m, err = a.c.SetMaintenance(a.ctx, pop, args[0] == "on")
			} else if pop {
				return a.usageError("--pop goes with on or off")
			}
			if err != nil {
				return a.fail(err)
			}
			rows := [][]string{
				{"push", onOff(m.Push), "pushes go to the file buffer"},
				{"pop", onOff(m.Pop), "pops answer empty"},
				{"buffer", strconv.Itoa(m.BufferedMessages) + " spooled", map[bool]string{true: "healthy", false: "replay failing"}[m.BufferHealthy]},
			}
			return a.print(m, []string{"MODE", "STATE", "WHEN ON"}, rows)
		}),
	}
	cmd.Flags().BoolVar(&pop, "pop", false, "switch pop maintenance instead of push maintenance")
	return cmd
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
