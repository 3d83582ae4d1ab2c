package main

import (
	"strings"
	"testing"
)

// The validation's method: --method, or gap when only gap's flags are given; flags of the method
// not run are refused by name before anything starts.
func TestValidateMethod(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // the method, or a part of the error
		ok   bool
	}{
		{nil, methodHoldout, true},
		{[]string{"--repeats", "5", "--primaries", "4"}, methodHoldout, true},
		{[]string{"--rounds", "16"}, methodGap, true},
		{[]string{"--method", "gap", "--share", "0.3"}, methodGap, true},
		{[]string{"--method", "holdout", "--rounds", "3"}, "--rounds: only --method gap reads it", false},
		{[]string{"--rounds", "3", "--primaries", "4"}, "--primaries: only --method holdout reads it", false},
		{[]string{"--method", "gap", "--repeats", "2", "--step-length", "3s"}, "--step-length, --repeats: only --method holdout", false},
		{[]string{"--method", "line"}, `--method "line": want "holdout" or "gap"`, false},
	} {
		cmd := newSimulateValidateCmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		method, _ := cmd.Flags().GetString("method")
		have, err := validateMethod(cmd.Flags(), method)
		switch {
		case tc.ok && (err != nil || have != tc.want):
			t.Errorf("%v: method %q, error %v; want %q", tc.args, have, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v; want it to say %q", tc.args, err, tc.want)
		}
	}
}
