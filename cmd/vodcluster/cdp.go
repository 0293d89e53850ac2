package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"vodcluster/cdp"
	"vodcluster/proto/token"
)

func cdpCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "cdp",
		Short: "Run the origin (CDP): the catalog of MPEG-TS titles served in ranges over gRPC",
		RunE: func(*cobra.Command, []string) error {
			h := catchHangups() // from now: a SIGHUP while the origin reads its titles does not kill it
			defer h.stop()
			cfg, err := loadConfig(path)
			if err != nil {
				return err
			}
			if err := cfg.needSection("cdp"); err != nil {
				return err
			}
			if err := cfg.CDP.validate(); err != nil {
				return inConfig(path, err)
			}
			if err := checkTitleDir(cfg.CDP.Dir); err != nil {
				return inConfig(path, err)
			}
			s, err := newCDP(cfg.CDP)
			if err != nil {
				return inConfig(path, err)
			}
			return namingListenKey(path, runUntilSignal(s, func() { h.handle("reading the title directory", "dir", s.Dir, s.Reload) }), cfg.CDP.listenKeys())
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", "", "configuration file (YAML, section cdp:)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// newCDP builds the origin from its configuration section. Errors: a TLS
// certificate and key that do not load, a secret_file that cannot be read
// or is too short.
func newCDP(c CDPConfig) (*cdp.Server, error) {
	creds, err := serverTLS("tls_cert_file", c.TLSCert, "tls_key_file", c.TLSKey)
	if err != nil {
		return nil, err
	}
	var credential string
	if c.SecretFile != "" {
		secret, err := readSecret(c.SecretFile)
		if err != nil {
			return nil, err
		}
		credential = token.OriginCredential(secret)
	}
	return &cdp.Server{
		Credential:      credential,
		Dir:             c.Dir,
		Listen:          orString(c.Listen, cdp.DefaultListen),
		MetricsListen:   c.MetricsListen,
		SetupDelay:      c.SetupDelay,
		MaxTransfers:    c.MaxTransfers,
		TransferRateBps: c.TransferRateBps,
		ChunkBytes:      c.ChunkBytes,
		CatalogPoll:     c.CatalogPoll,
		Logger:          slog.Default(),
		Creds:           creds,
	}, nil
}

// checkTitleDir checks the origin's dir before it starts, so that a
// missing one is named by its key and the configuration file, as other
// configuration errors are: the origin said "cdp: catalog directory: stat
// /srv/vodcluster/titles: no such file or directory". An empty dir is
// left to validate.
func checkTitleDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return fmt.Errorf("dir %s: %w", dir, pe.Err)
	} else if err != nil {
		return fmt.Errorf("dir %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("dir %s: not a directory (the directory of the titles and their catalog.yaml)", dir)
	}
	return nil
}
