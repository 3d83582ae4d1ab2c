package main

// module is the module path; an import is the module's own when it is module or under module/.
const module = "ratelab"

// house is ratelab's layering, read from its folders: each top-level folder is one layer, and
// every package in the folder or under it belongs to that layer. docs/architecture.md's package
// table lists the same folders top to bottom (checkTable).
var house = layering{
	// Bottom up. A package may import the packages of the layers below its own. The folders on
	// one line are peers: they import nothing of each other.
	layers: [][]string{
		// Leaves: the workload, the results files, the Redis and gubernator lifecycle, the scripts.
		{"workload", "results", "cluster", "lua"},
		// The algorithms, their in-memory twins and the HTTP gateway in front of them.
		{"limiter"},
		// The Spec: what to run.
		{"scenarios"},
		// The parts of one run (its checks, its faults, the engine, the HTTP driver), and the
		// report of a run directory: neither imports the other.
		{"run", "report"},
		// Studies of many runs, and the guided demo.
		{"studies"},
		// The CLI and the tools.
		{"cmd"},
	},

	// Imports inside one layer. A package may always import a package above it in its own
	// folder's tree (workload/trace imports workload); beyond that, where a folder's packages
	// build on each other, its chain lists them bottom up and each may import those before it.
	chains: [][]string{
		{"run/check", "run/faults", "run/engine", "run/attack"},
		{"studies/capacity", "studies/simulate"},
	},

	// Packages held to fewer folders than all below them, where the design says so.
	only: map[string][]string{
		// The limiter knows its scripts, never the cluster's lifecycle or the Spec.
		"limiter": {"lua"},
		// The checks judge a stream of decisions against a policy; they never read a scenario.
		"run/check": {"limiter", "results"},
		// The report reads run directories: the results files, never what wrote them.
		"report": {"results"},
	},
}
