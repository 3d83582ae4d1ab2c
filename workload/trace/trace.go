package trace

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Errors of this package; the wrapping message names the request, block or field.
var (
	// ErrTruncated: the file ends before its end marker (an interrupted write). What was read
	// before the cut is returned with it.
	ErrTruncated = errors.New("trace: truncated")
	// ErrCorrupt: a checksum or a field does not hold, or the file is not a trace at all.
	ErrCorrupt = errors.New("trace: corrupt")
	// ErrVersion: the file is a trace of a format version this package does not read.
	ErrVersion = errors.New("trace: unsupported version")
	// ErrInvalid: a Writer or Generate was given something the format cannot hold.
	ErrInvalid = errors.New("trace: invalid")
)

// Format limits. They bound what a reader allocates for a hostile or damaged file.
const (
	// Version is the format version Writer writes and Reader reads.
	Version = 1
	// MaxBlockRequests is the most requests in one checksummed block.
	MaxBlockRequests = 4096
	// MaxNameLen is the longest tenant prefix, tenant name or endpoint name, in bytes.
	MaxNameLen = 256
	// MaxTenantNames is the most tenant names a header may list.
	MaxTenantNames = 1 << 24
	// MaxEndpoints is the most endpoints a header may list (indices are uint16).
	MaxEndpoints = 1 << 16
	// maxRequestBytes is the longest encoding of one request: four 64-bit varints.
	maxRequestBytes = 4 * 10
)

// magic opens every trace file.
const magic = "RLTRACE\n"

// Request is one request of a trace.
type Request struct {
	// At is the request's offset from the trace's start; a whole number of microseconds in a
	// file, never decreasing from one request to the next.
	At time.Duration
	// Tenant is the tenant id: an index into Header.Tenants, or with no names the number after
	// Header.TenantPrefix.
	Tenant uint32
	// Endpoint is an index into Header.Endpoints.
	Endpoint uint16
	// Cost is the tokens the request takes (1 for an ordinary request).
	Cost uint32
}

// Header is what a trace says about its requests.
type Header struct {
	// Start is the wall-clock time of offset 0 (microsecond resolution); zero when unknown.
	Start time.Time
	// TenantPrefix names tenants when Tenants is empty: tenant i is TenantPrefix + "i"
	// (a generated trace's "tenant-0" is the hottest Zipf rank, as in the scenario engine).
	TenantPrefix string
	// Tenants are the tenants' names (their API keys on replay), by id; empty means prefixed ids.
	Tenants []string
	// Endpoints are the endpoints' names by index; at least one.
	Endpoints []string
}

// TenantName returns tenant id's name (the API key a replay sends for it).
func (h *Header) TenantName(id uint32) string {
	if len(h.Tenants) > 0 {
		if int(id) < len(h.Tenants) {
			return h.Tenants[id]
		}
		return ""
	}
	return h.TenantPrefix + strconv.FormatUint(uint64(id), 10)
}

// Validate reports every problem of h at once.
func (h *Header) Validate() error {
	var errs []error
	if len(h.TenantPrefix) > MaxNameLen {
		errs = append(errs, fmt.Errorf("%w: header tenant prefix: %d bytes, at most %d", ErrInvalid, len(h.TenantPrefix), MaxNameLen))
	}
	if len(h.Tenants) > MaxTenantNames {
		errs = append(errs, fmt.Errorf("%w: header tenants: %d names, at most %d", ErrInvalid, len(h.Tenants), MaxTenantNames))
	}
	for i, t := range h.Tenants {
		if t == "" || len(t) > MaxNameLen {
			errs = append(errs, fmt.Errorf("%w: header tenants[%d] %q: want 1..%d bytes", ErrInvalid, i, t, MaxNameLen))
			break
		}
	}
	if len(h.Endpoints) == 0 || len(h.Endpoints) > MaxEndpoints {
		errs = append(errs, fmt.Errorf("%w: header endpoints: %d names, want 1..%d", ErrInvalid, len(h.Endpoints), MaxEndpoints))
	}
	for i, e := range h.Endpoints {
		if e == "" || len(e) > MaxNameLen {
			errs = append(errs, fmt.Errorf("%w: header endpoints[%d] %q: want 1..%d bytes", ErrInvalid, i, e, MaxNameLen))
			break
		}
	}
	if !h.Start.IsZero() && h.Start.UnixMicro() <= 0 {
		errs = append(errs, fmt.Errorf("%w: header start %v: must be after 1970 (or zero for unknown)", ErrInvalid, h.Start))
	}
	return errors.Join(errs...)
}

// checkRecord reports a request h cannot hold.
func (h *Header) checkRecord(r Request) error {
	if len(h.Tenants) > 0 && int(r.Tenant) >= len(h.Tenants) {
		return fmt.Errorf("tenant %d: the header names %d tenants", r.Tenant, len(h.Tenants))
	}
	if int(r.Endpoint) >= len(h.Endpoints) {
		return fmt.Errorf("endpoint %d: the header names %d endpoints", r.Endpoint, len(h.Endpoints))
	}
	return nil
}

// Trace is a header and its requests, in time order.
type Trace struct {
	Header
	Requests []Request
	// Span is the window the requests were scheduled in, when known: Generate sets the duration
	// it drew them for. A file does not keep it (a read trace has 0), so Window estimates it.
	Span time.Duration
}

// Duration is the offset of the last request (0 for an empty trace).
func (t *Trace) Duration() time.Duration {
	if len(t.Requests) == 0 {
		return 0
	}
	return t.Requests[len(t.Requests)-1].At
}
