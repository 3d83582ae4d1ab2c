package results

import "errors"

// Sentinel errors; the functions of this package wrap them with %w and add the file, line or
// field involved. Check them with errors.Is.
var (
	// ErrSchema: a summary or histogram file declares a schema this version does not read.
	ErrSchema = errors.New("unsupported schema")
	// ErrCorrupt: a results file is malformed (bad header, bad number, wrong field count).
	ErrCorrupt = errors.New("corrupt results file")
	// ErrTruncated: a results file ends in the middle of a record, as an interrupted write leaves it.
	ErrTruncated = errors.New("truncated results file")
	// ErrInvalid: a value cannot be written (NaN, infinity or a negative count).
	ErrInvalid = errors.New("invalid value")
)
