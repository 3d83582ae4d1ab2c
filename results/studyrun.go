package results

// StudyRun is one run of a study (the regions sweep, the durability matrix) as the study keeps
// it: what it varied, where it went and what it measured. The study fills it and the report's
// trade-off tables read it.
type StudyRun struct {
	// Design and PeriodS are the regions design and the rebalance period T in seconds (0 for
	// the designs without a period); empty in a durability run.
	Design  string  `json:"design,omitempty"`
	PeriodS float64 `json:"period_s,omitempty"`
	// Fault and Setting are the injected fault and the durability setting; empty in a regions
	// run.
	Fault   string `json:"fault,omitempty"`
	Setting string `json:"setting,omitempty"`
	// Dir is the run directory.
	Dir string `json:"dir"`
	// Err says why the run failed or did not finish; empty when it did.
	Err string `json:"error,omitempty"`
	// Summary is the run's summary; nil when the run failed before it had one.
	Summary *Summary `json:"-"`
}
