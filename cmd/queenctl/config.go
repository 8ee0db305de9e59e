package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// contextEntry is one named broker with its token.
type contextEntry struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Token  string `json:"token,omitempty"`
}

// config is queenctl's configuration file: named contexts and the current one.
type config struct {
	CurrentContext string         `json:"current-context,omitempty"`
	Contexts       []contextEntry `json:"contexts"`
}

// find returns the context named name, or nil.
func (c *config) find(name string) *contextEntry {
	for i := range c.Contexts {
		if c.Contexts[i].Name == name {
			return &c.Contexts[i]
		}
	}
	return nil
}

// configPath is $QUEENCTL_CONFIG, else queenctl/config.yaml in the user's configuration
// directory (~/.config on Linux).
func configPath() (string, error) {
	if p := os.Getenv("QUEENCTL_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory (set QUEENCTL_CONFIG): %w", err)
	}
	return filepath.Join(dir, "queenctl", "config.yaml"), nil
}

// loadConfig reads the configuration file; a missing file is an empty configuration.
func loadConfig() (*config, string, error) {
	path, err := configPath()
	if err != nil {
		return nil, "config", err
	}
	var cfg config
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &cfg, path, nil
	}
	if err != nil {
		return nil, path, err
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return nil, path, fmt.Errorf("not a queenctl configuration: %w", err)
	}
	return &cfg, path, nil
}

// save writes the configuration readable by its owner only (0600, in a 0700 directory),
// since it holds tokens: to a temporary file first, renamed over the old one.
func (c *config) save(path string) error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// maskToken shows whether a token is set without showing it.
func maskToken(t string) string {
	if t == "" {
		return ""
	}
	return "********"
}
