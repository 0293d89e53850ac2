package main

import (
	"github.com/spf13/cobra"

	"vodcluster/cmd/internal/sim"
	"vodcluster/smm/boundcheck"
)

func simCmd() *cobra.Command { return sim.NewCommand() }

func boundCmd() *cobra.Command { return boundcheck.NewCommand() }
