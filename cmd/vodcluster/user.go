package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"vodcluster/acm/boss"
)

func userCmd() *cobra.Command {
	var realm string
	var packages []string
	cmd := &cobra.Command{
		Use:     "user NAME",
		Short:   "Print a users-file entry for NAME (bcrypt hash for Basic, HA1 for Digest); the password is read from stdin",
		Example: "  echo -n 's3cret' | vodcluster user alice --package basic --package premium >> users.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pw, err := bufio.NewReader(os.Stdin).ReadString('\n')
			if err != nil && pw == "" {
				return fmt.Errorf("read password from stdin: %w", err)
			}
			u, err := boss.NewUser(args[0], strings.TrimRight(pw, "\r\n"), realm, packages)
			if err != nil {
				return err
			}
			b, err := yaml.Marshal([]boss.User{u})
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&realm, "realm", "vodcluster", "authentication realm (must match the manager's)")
	cmd.Flags().StringSliceVar(&packages, "package", []string{"*"}, "entitlement package (repeatable; * = all)")
	return cmd
}
