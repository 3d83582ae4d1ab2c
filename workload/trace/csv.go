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
	im := csvImport{
		tenants:   csvNames{what: "tenants", limit: MaxTenantNames, ids: map[string]uint32{}},
		endpoints: csvNames{what: "endpoints", limit: MaxEndpoints, ids: map[string]uint32{}},
	}
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
		if err := im.add(f, line); err != nil {
			return nil, err
		}
	}
	if len(im.rows) == 0 {
		return nil, fmt.Errorf("%w: csv: no rows; want time,tenant,endpoint[,cost] lines", ErrInvalid)
	}
	return im.trace(), nil
}

// csvRow is one imported row: its time, the ids of its tenant and endpoint, and its line.
type csvRow struct {
	at             time.Time
	tenant, cost   uint32
	endpoint, line uint32
}

// csvImport is what ImportCSV has read so far: the rows in file order and the names seen.
type csvImport struct {
	rows      []csvRow
	tenants   csvNames
	endpoints csvNames
}

// add checks one CSV record (line is its line number) and appends it as a row; a first record
// whose time does not parse is a header and is skipped.
func (im *csvImport) add(f []string, line int) error {
	if len(f) < 3 || len(f) > 4 {
		return fmt.Errorf("%w: csv line %d: %d columns; want time,tenant,endpoint[,cost]", ErrCorrupt, line, len(f))
	}
	at, err := parseTime(strings.TrimSpace(f[0]))
	if err != nil {
		if line == 1 && len(im.rows) == 0 {
			return nil // a header row
		}
		return fmt.Errorf("%w: csv line %d column 1 (time) %q: want RFC 3339 or Unix seconds", ErrCorrupt, line, f[0])
	}
	tenant, ep := strings.TrimSpace(f[1]), strings.TrimSpace(f[2])
	if tenant == "" || len(tenant) > MaxNameLen {
		return fmt.Errorf("%w: csv line %d column 2 (tenant) %q: want 1..%d bytes", ErrCorrupt, line, tenant, MaxNameLen)
	}
	if ep == "" || len(ep) > MaxNameLen {
		return fmt.Errorf("%w: csv line %d column 3 (endpoint) %q: want 1..%d bytes", ErrCorrupt, line, ep, MaxNameLen)
	}
	cost := uint64(1)
	if len(f) == 4 && strings.TrimSpace(f[3]) != "" {
		cost, err = strconv.ParseUint(strings.TrimSpace(f[3]), 10, 32)
		if err != nil {
			return fmt.Errorf("%w: csv line %d column 4 (cost) %q: want a whole number of tokens >= 0", ErrCorrupt, line, f[3])
		}
	}
	tid, err := im.tenants.id(tenant, line)
	if err != nil {
		return err
	}
	eid, err := im.endpoints.id(ep, line)
	if err != nil {
		return err
	}
	im.rows = append(im.rows, csvRow{at: at, tenant: tid, endpoint: eid, cost: uint32(cost), line: uint32(line)})
	return nil
}

// trace sorts the rows by time (equal times keep file order) and returns them as a trace whose
// start is the first row's time.
func (im *csvImport) trace() *Trace {
	rows := im.rows
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].at.Before(rows[j].at) })
	start := rows[0].at.Truncate(time.Microsecond)
	t := &Trace{Header: Header{Start: start, Tenants: im.tenants.names, Endpoints: im.endpoints.names}}
	if start.UnixMicro() <= 0 {
		t.Start = time.Time{}
	}
	t.Requests = make([]Request, len(rows))
	for i, r := range rows {
		t.Requests[i] = Request{At: r.at.Sub(start).Truncate(time.Microsecond), Tenant: r.tenant, Endpoint: uint16(r.endpoint), Cost: r.cost}
	}
	return t
}

// csvNames gives names ids in order of first appearance, at most limit of them.
type csvNames struct {
	what  string // "tenants" or "endpoints", for the error
	limit int
	names []string
	ids   map[string]uint32
}

// id returns name's id, giving it the next one on its first appearance (at line).
func (n *csvNames) id(name string, line int) (uint32, error) {
	if id, ok := n.ids[name]; ok {
		return id, nil
	}
	if len(n.names) == n.limit {
		return 0, fmt.Errorf("%w: csv line %d: more than %d distinct %s", ErrInvalid, line, n.limit, n.what)
	}
	id := uint32(len(n.names))
	n.ids[name] = id
	n.names = append(n.names, name)
	return id, nil
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
