package workload

import "errors"

// ErrInvalid is wrapped by every constructor error in this package; the wrapping message names the
// parameter, the value given and the valid range. Check it with errors.Is.
var ErrInvalid = errors.New("workload: invalid parameter")
