package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// printJSON writes v as indented JSON, the --json output of the commands that have one.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
