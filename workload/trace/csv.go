package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ImportCSV reads an access log as CSV rows "time,tenant,endpoint[,cost]" and returns them as
// a trace in time order (rows with equal times keep their file order, so each tenant's order
// is kept). time is RFC 3339 (fractions allowed) or Unix seconds (e.g. 1717000000.25); tenant
// is the API key sent on replay; endpoint is a name or path; cost defaults to 1. A first row
// whose time does not parse is taken as a header and skipped. Tenants and endpoints get ids in
// order of first appearance. Errors name the line and the column.
func ImportCSV(r io.Reader) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	type row struct {
		at             time.Time
		tenant, cost   uint32
		endpoint, line uint32
	}
	var (
		rows      []row
		tenants   []string
		endpoints []string
		tenantID  = map[string]uint32{}
		epID      = map[string]uint32{}
	)
	for line := 1; ; line++ {
		f, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%w: csv line %d: %v", ErrCorrupt, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("csv line %d: %w", line, err)
		}
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("%w: csv line %d: %d columns; want time,tenant,endpoint[,cost]", ErrCorrupt, line, len(f))
		}
		at, err := parseTime(strings.TrimSpace(f[0]))
		if err != nil {
			if line == 1 && len(rows) == 0 {
				continue // a header row
			}
			return nil, fmt.Errorf("%w: csv line %d column 1 (time) %q: want RFC 3339 or Unix seconds", ErrCorrupt, line, f[0])
		}
		tenant, ep := strings.TrimSpace(f[1]), strings.TrimSpace(f[2])
		if tenant == "" || len(tenant) > MaxNameLen {
			return nil, fmt.Errorf("%w: csv line %d column 2 (tenant) %q: want 1..%d bytes", ErrCorrupt, line, tenant, MaxNameLen)
		}
		if ep == "" || len(ep) > MaxNameLen {
			return nil, fmt.Errorf("%w: csv line %d column 3 (endpoint) %q: want 1..%d bytes", ErrCorrupt, line, ep, MaxNameLen)
		}
		cost := uint64(1)
		if len(f) == 4 && strings.TrimSpace(f[3]) != "" {
			cost, err = strconv.ParseUint(strings.TrimSpace(f[3]), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%w: csv line %d column 4 (cost) %q: want a whole number of tokens >= 0", ErrCorrupt, line, f[3])
			}
		}
		tid, ok := tenantID[tenant]
		if !ok {
			if len(tenants) == MaxTenantNames {
				return nil, fmt.Errorf("%w: csv line %d: more than %d distinct tenants", ErrInvalid, line, MaxTenantNames)
			}
			tid = uint32(len(tenants))
			tenantID[tenant] = tid
			tenants = append(tenants, tenant)
		}
		eid, ok := epID[ep]
		if !ok {
			if len(endpoints) == MaxEndpoints {
				return nil, fmt.Errorf("%w: csv line %d: more than %d distinct endpoints", ErrInvalid, line, MaxEndpoints)
			}
			eid = uint32(len(endpoints))
			epID[ep] = eid
			endpoints = append(endpoints, ep)
		}
		rows = append(rows, row{at: at, tenant: tid, endpoint: eid, cost: uint32(cost), line: uint32(line)})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: csv: no rows; want time,tenant,endpoint[,cost] lines", ErrInvalid)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].at.Before(rows[j].at) })
	start := rows[0].at.Truncate(time.Microsecond)
	t := &Trace{Header: Header{Start: start, Tenants: tenants, Endpoints: endpoints}}
	if start.UnixMicro() <= 0 {
		t.Start = time.Time{}
	}
	t.Records = make([]Record, len(rows))
	for i, r := range rows {
		t.Records[i] = Record{At: r.at.Sub(start).Truncate(time.Microsecond), Tenant: r.tenant, Endpoint: uint16(r.endpoint), Cost: r.cost}
	}
	return t, nil
}

// parseTime reads Unix seconds (integer or decimal) or an RFC 3339 time.
func parseTime(s string) (time.Time, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if !(v >= 0) || v > 1e11 || math.IsInf(v, 0) {
			return time.Time{}, fmt.Errorf("unix seconds %v out of range", v)
		}
		sec, frac := math.Modf(v)
		return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1000).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
