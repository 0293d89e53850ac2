package main

import (
	"github.com/spf13/cobra"

	"vodcluster/cmd/internal/sim"
)

func simCmd() *cobra.Command { return sim.NewCommand() }
