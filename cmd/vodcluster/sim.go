package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func simCmd() *cobra.Command {
	return &cobra.Command{Use: "sim", Short: "Simulator", RunE: func(*cobra.Command, []string) error { return errors.New("sim: not wired yet") }}
}
