package main

// module is the module path; an import is the module's own when it is module or under module/.
const module = "ratelab"

// A layerRule says which of the module's packages the packages matching pkg may import in their
// production code. Patterns are import paths as the go command writes them: "ratelab/x" is that
// package only, "ratelab/x/..." is ratelab/x and every package under it. A package is held to the
// one row whose pattern matches it most closely: an exact pattern before any "/..." pattern, a
// longer "/..." pattern before a shorter one. Imports from outside the module are not checked.
type layerRule struct {
	pkg   string
	allow []string
}

// The imports shared by several rows, lowest layers first.
var (
	// limiterAndBelow is the limiter with its gateway, and the Lua scripts it runs.
	limiterAndBelow = []string{"ratelab/limiter/...", "ratelab/lua"}

	// belowEngine is everything the scenario engine may build on: the Spec, the checks and faults,
	// the cluster launchers, the limiter, the results and the workload. Never a driver of runs,
	// the report or the CLI.
	belowEngine = join([]string{
		"ratelab/scenarios",
		"ratelab/scenarios/check",
		"ratelab/scenarios/faults",
		"ratelab/scenarios/cluster/...",
		"ratelab/results/...",
		"ratelab/workload/...",
	}, limiterAndBelow)

	// engineAndBelow is what a driver of runs (attack, capacity, bench, simulate, tradeoff) may
	// import.
	engineAndBelow = join([]string{"ratelab/scenarios/engine"}, belowEngine)

	// drivers are the packages that drive runs; only the guided demo and the CLI import them.
	drivers = []string{
		"ratelab/scenarios/attack",
		"ratelab/scenarios/capacity",
		"ratelab/scenarios/bench",
		"ratelab/scenarios/simulate",
		"ratelab/scenarios/tradeoff",
	}
)

// layers is the import direction of the module, one row per layer from the bottom up: a package
// may import only what its row lists, which is always below it (or beside it, where the row says
// so). A package of the module that no row matches is an error: add it here.
var layers = []layerRule{
	// Leaves: the workload and the results files import nothing of ours.
	{pkg: "ratelab/workload"},
	{pkg: "ratelab/workload/trace", allow: []string{"ratelab/workload"}},
	{pkg: "ratelab/results"},
	{pkg: "ratelab/results/compare", allow: []string{"ratelab/results"}},

	// The cluster launchers are a leaf: they know nothing of limiters or scenarios.
	{pkg: "ratelab/scenarios/cluster/...", allow: []string{"ratelab/scenarios/cluster/..."}},

	// The limiter, bottom up: the scripts, the algorithms, the HTTP gateway in front of them.
	{pkg: "ratelab/lua"},
	{pkg: "ratelab/limiter", allow: []string{"ratelab/lua"}},
	{pkg: "ratelab/limiter/gateway", allow: []string{"ratelab/limiter", "ratelab/lua"}},

	// The report reads run directories: the results files, never the scenarios that wrote them.
	{pkg: "ratelab/report/...", allow: []string{"ratelab/results", "ratelab/report/..."}},
	// Live metrics of a run: fed by the results' rows and snapshots, never by the engine.
	{pkg: "ratelab/report/live", allow: []string{"ratelab/results"}},

	// The Spec; the cluster package only for its typed names.
	{pkg: "ratelab/scenarios", allow: []string{
		"ratelab/limiter",
		"ratelab/lua",
		"ratelab/results",
		"ratelab/workload",
		"ratelab/workload/trace",
		"ratelab/scenarios/cluster",
	}},

	// Checks of a run, and the faults injected into it (which may use the checks).
	{pkg: "ratelab/scenarios/check", allow: []string{"ratelab/limiter", "ratelab/results"}},
	{pkg: "ratelab/scenarios/faults", allow: []string{
		"ratelab/scenarios",
		"ratelab/scenarios/check",
		"ratelab/scenarios/cluster/...",
		"ratelab/limiter",
		"ratelab/results",
	}},

	{pkg: "ratelab/scenarios/engine", allow: belowEngine},

	// Drivers of runs share a row; of them only simulate may import another (capacity).
	{pkg: "ratelab/scenarios/attack", allow: engineAndBelow},
	{pkg: "ratelab/scenarios/capacity", allow: engineAndBelow},
	{pkg: "ratelab/scenarios/bench", allow: engineAndBelow},
	{pkg: "ratelab/scenarios/simulate", allow: join([]string{"ratelab/scenarios/capacity"}, engineAndBelow)},
	{pkg: "ratelab/scenarios/tradeoff", allow: engineAndBelow},

	// The performance gate builds ratelab and runs the binaries on a cluster it starts; it reads
	// their summaries and judges them with results/compare, never the engine.
	{pkg: "ratelab/scenarios/gate", allow: []string{"ratelab/scenarios", "ratelab/scenarios/cluster/...", "ratelab/results/..."}},

	// The guided demo tells its story with the drivers and the report.
	{pkg: "ratelab/scenarios/demo", allow: join(drivers, engineAndBelow, []string{"ratelab/report/..."})},

	// The CLI and tools sit on top and may import anything of ours.
	{pkg: "ratelab/cmd/...", allow: []string{"ratelab/..."}},
}

// join returns the lists one after another in a new slice, so that rows never share a backing
// array.
func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
