// Command ratelab load-tests and sizes distributed rate limiters. Each subcommand lives in its own
// file, parses flags into an options struct and calls one library entry point.
package main

import (
	"errors"
	"fmt"
	"os"
)

// exitError carries a process exit code through cobra (exit.go lists the codes; 1 = error).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	err := newRootCmd().Execute()
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintln(os.Stderr, "ratelab:", err)
	os.Exit(code)
}
