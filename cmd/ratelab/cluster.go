package main

import "github.com/spf13/cobra"

// newClusterCmd is a placeholder until the cluster provider lands.
func newClusterCmd() *cobra.Command {
	return &cobra.Command{Use: "cluster", Short: "Manage a local Redis Cluster"}
}
