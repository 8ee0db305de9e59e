package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
)

// contextCmd is `queenctl context`: named brokers with their tokens, in the config file.
func (a *app) contextCmd() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:   "context",
		Short: "Manage named contexts (server and token)",
		Long: `A context names a broker and its token. Contexts are kept in $QUEENCTL_CONFIG, else in
queenctl/config.yaml under the user's configuration directory (~/.config on Linux), written
readable by its owner only (0600). The current context is used when neither --server nor
$QUEEN_SERVER names a broker; --context NAME picks another one for one command.`,
		Example: `  queenctl context set local --server http://localhost:6632
  queenctl context set prod --server https://queen.example.com --token "$TOKEN"
  queenctl context use local
  queenctl context list
  queenctl context delete prod`,
		Annotations: map[string]string{"noClient": "1"},
	})
	var server, token string
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Create or update a context (the first one becomes current)",
		Args:  nargs(1, 1),
		RunE: a.run(func(args []string) int {
			cfg, path, err := loadConfig()
			if err != nil {
				return a.fail(fmt.Errorf("%s: %w", path, err))
			}
			e := cfg.find(args[0])
			if e == nil {
				if server == "" {
					return a.usageError("a new context needs --server")
				}
				cfg.Contexts = append(cfg.Contexts, contextEntry{Name: args[0]})
				e = &cfg.Contexts[len(cfg.Contexts)-1]
			}
			if server != "" {
				e.Server = server
			}
			if token != "" {
				e.Token = token
			}
			if cfg.CurrentContext == "" {
				cfg.CurrentContext = args[0]
			}
			if err := cfg.save(path); err != nil {
				return a.fail(err)
			}
			fmt.Fprintf(a.stderr, "context %q saved in %s\n", args[0], path)
			return exitOK
		}),
	}
	// --server and --token are the global flags; here they are stored, not used.
	set.PreRunE = func(c *cobra.Command, _ []string) error {
		server, token = "", ""
		if c.Flags().Changed("server") {
			server = a.g.server
		}
		if c.Flags().Changed("token") {
			token = a.g.token
		}
		return nil
	}
	use := &cobra.Command{
		Use:               "use NAME",
		Short:             "Make a context the current one",
		Args:              nargs(1, 1),
		ValidArgsFunction: completeContexts,
		RunE: a.run(func(args []string) int {
			return a.editContexts(args[0], func(cfg *config, _ int) { cfg.CurrentContext = args[0] })
		}),
	}
	del := &cobra.Command{
		Use:               "delete NAME",
		Aliases:           []string{"rm"},
		Short:             "Delete a context",
		Args:              nargs(1, 1),
		ValidArgsFunction: completeContexts,
		RunE: a.run(func(args []string) int {
			return a.editContexts(args[0], func(cfg *config, i int) {
				cfg.Contexts = slices.Delete(cfg.Contexts, i, i+1)
				if cfg.CurrentContext == args[0] {
					cfg.CurrentContext = ""
				}
			})
		}),
	}
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the contexts (tokens masked)",
		Args:    nargs(0, 0),
		RunE: a.run(func([]string) int {
			cfg, path, err := loadConfig()
			if err != nil {
				return a.fail(fmt.Errorf("%s: %w", path, err))
			}
			type row struct {
				Name    string `json:"name"`
				Server  string `json:"server"`
				Token   string `json:"token"`
				Current bool   `json:"current"`
			}
			out := make([]row, len(cfg.Contexts))
			rows := make([][]string, len(cfg.Contexts))
			for i, e := range cfg.Contexts {
				out[i] = row{e.Name, e.Server, maskToken(e.Token), e.Name == cfg.CurrentContext}
				cur := ""
				if out[i].Current {
					cur = "*"
				}
				rows[i] = []string{cur, e.Name, e.Server, out[i].Token}
			}
			return a.print(out, []string{"CURRENT", "NAME", "SERVER", "TOKEN"}, rows)
		}),
	}
	current := &cobra.Command{
		Use:   "current",
		Short: "Print the current context's name",
		Args:  nargs(0, 0),
		RunE: a.run(func([]string) int {
			cfg, path, err := loadConfig()
			if err != nil {
				return a.fail(fmt.Errorf("%s: %w", path, err))
			}
			if cfg.CurrentContext == "" {
				fmt.Fprintln(a.stderr, "queenctl context current: no current context")
				return exitNotFound
			}
			fmt.Fprintln(a.stdout, cfg.CurrentContext)
			return exitOK
		}),
	}
	cmd.AddCommand(set, use, list, current, del)
	return cmd
}

// editContexts changes the configuration around an existing context and saves it; an
// unknown context is "not found" (exit 3).
func (a *app) editContexts(name string, edit func(cfg *config, i int)) int {
	cfg, path, err := loadConfig()
	if err != nil {
		return a.fail(fmt.Errorf("%s: %w", path, err))
	}
	i := slices.IndexFunc(cfg.Contexts, func(e contextEntry) bool { return e.Name == name })
	if i < 0 {
		fmt.Fprintf(a.stderr, "queenctl %s: context %q does not exist\n", a.name, name)
		return exitNotFound
	}
	edit(cfg, i)
	if err := cfg.save(path); err != nil {
		return a.fail(err)
	}
	return exitOK
}

// completeContexts completes context names.
func completeContexts(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cfg, _, err := loadConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, e := range cfg.Contexts {
		names = append(names, e.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
