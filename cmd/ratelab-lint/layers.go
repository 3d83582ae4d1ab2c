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
		"ratelab/run/check",
		"ratelab/run/faults",
		"ratelab/cluster/...",
		"ratelab/results/...",
		"ratelab/workload/...",
	}, limiterAndBelow)

	// engineAndBelow is what a driver of runs (attack, capacity, bench, simulate, tradeoff) may
	// import.
	engineAndBelow = join([]string{"ratelab/run/engine"}, belowEngine)

	// drivers are the packages that drive runs; only the guided demo and the CLI import them.
	drivers = []string{
		"ratelab/run/attack",
		"ratelab/studies/capacity",
		"ratelab/studies/bench",
		"ratelab/studies/simulate",
		"ratelab/studies/tradeoff",
		"ratelab/studies/wild",
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
	{pkg: "ratelab/cluster/...", allow: []string{"ratelab/cluster/..."}},
	// The gubernator daemons: started with the cluster package's spawner, its Forwarder between them.
	{pkg: "ratelab/cluster/gubernator", allow: []string{"ratelab/cluster"}},

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
		"ratelab/cluster",
	}},

	// Checks of a run, and the faults injected into it (which may use the checks).
	{pkg: "ratelab/run/check", allow: []string{"ratelab/limiter", "ratelab/results"}},
	{pkg: "ratelab/run/faults", allow: []string{
		"ratelab/scenarios",
		"ratelab/run/check",
		"ratelab/cluster/...",
		"ratelab/limiter",
		"ratelab/results",
	}},

	{pkg: "ratelab/run/engine", allow: belowEngine},

	// Drivers of runs share a row; of them only simulate may import another (capacity).
	{pkg: "ratelab/run/attack", allow: engineAndBelow},
	{pkg: "ratelab/studies/capacity", allow: engineAndBelow},
	{pkg: "ratelab/studies/bench", allow: engineAndBelow},
	{pkg: "ratelab/studies/simulate", allow: join([]string{"ratelab/studies/capacity"}, engineAndBelow)},
	{pkg: "ratelab/studies/tradeoff", allow: engineAndBelow},
	{pkg: "ratelab/studies/wild", allow: engineAndBelow},

	// The guided demo tells its story with the drivers and the report.
	{pkg: "ratelab/studies/demo", allow: join(drivers, engineAndBelow, []string{"ratelab/report/..."})},

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
