package results

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// wantHeader is the column order readers rely on: the requiredColumns (17), then the optional ones.
const wantHeader = "t_s,offered,sent,dropped,allowed,denied,errors,timeout,moved,ask,noscript,clusterdown," +
	"p50_ms,p99_ms,p999_ms,overspend,central_ops,failed_open,failed_closed,tryagain,conn,other,false_denies,max_ms,p90_ms,faults,policy_version," +
	"late,dropped_share,time_utc,unreplicated,unknown,wait_short"

// seededIntervals returns n plausible rows from a seeded generator.
func seededIntervals(seed uint64, n int) []Interval {
	rng := rand.New(rand.NewPCG(seed, seed))
	rows := make([]Interval, n)
	for i := range rows {
		offered := 1000 + rng.Int64N(1000)
		dropped := rng.Int64N(50)
		sent := offered - dropped
		allowed := sent * 8 / 10
		p50 := float64(rng.IntN(5000)) / 1000
		rows[i] = Interval{
			TS: float64(i), Offered: offered, Sent: sent, Dropped: dropped,
			Allowed: allowed, Denied: sent - allowed - 3, Errors: 3,
			Timeout: rng.Int64N(3), Moved: rng.Int64N(3), Ask: rng.Int64N(3), NoScript: rng.Int64N(3),
			ClusterDown: rng.Int64N(3), P50Ms: p50, P99Ms: p50 * 3.5, P999Ms: p50 * 7.25,
			Overspend: rng.Int64N(4), CentralOps: sent, FailedOpen: rng.Int64N(2), FailedClosed: rng.Int64N(2),
			TryAgain: rng.Int64N(2), Conn: rng.Int64N(2), Other: rng.Int64N(2), FalseDenies: rng.Int64N(2),
			MaxMs: p50*10 + rng.Float64(), PolicyVersion: 1 + int64(i)/60, Late: rng.Int64N(2),
			Unreplicated: rng.Int64N(2), Unknown: rng.Int64N(3), WaitShort: rng.Int64N(2),
			Time: time.Date(2026, 12, 7, 9, 30, i, 437_000_000, time.UTC),
		}
	}
	return rows
}

// withField replaces field i (0-based) of a CSV line.
func withField(line string, i int, v string) string {
	f := strings.Split(line, ",")
	f[i] = v
	return strings.Join(f, ",")
}

func writeRows(t testing.TB, rows []Interval) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewTimeseriesWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestTimeseriesHeader(t *testing.T) {
	t.Parallel()
	have := strings.Join(TimeseriesColumns(), ",")
	if have != wantHeader {
		t.Errorf("columns\nhave %s\nwant %s", have, wantHeader)
	}
	data := writeRows(t, nil)
	if string(data) != wantHeader+"\n" {
		t.Errorf("header line = %q", data)
	}
}

func TestTimeseriesRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rows []Interval
	}{
		{"none", nil},
		{"one zero row", []Interval{{}}},
		{"seeded", seededIntervals(1, 120)},
		{"extremes", []Interval{{TS: 0.5, Offered: math.MaxInt64, P50Ms: 1e-9, P99Ms: math.MaxFloat64, MaxMs: 300000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			have, err := ReadTimeseries(bytes.NewReader(writeRows(t, tt.rows)))
			if err != nil {
				t.Fatal(err)
			}
			if len(have) != len(tt.rows) {
				t.Fatalf("read %d rows, wrote %d", len(have), len(tt.rows))
			}
			for i := range have {
				if have[i] != tt.rows[i] {
					t.Errorf("row %d\nhave %+v\nwant %+v", i, have[i], tt.rows[i])
				}
			}
		})
	}
}

// TestTimeseriesWriteFlushes checks that each row reaches the file at once, even through a
// buffered writer: an interrupted run keeps every row written so far.
func TestTimeseriesWriteFlushes(t *testing.T) {
	t.Parallel()
	var file bytes.Buffer
	bw := bufio.NewWriterSize(&file, 64<<10)
	w, err := NewTimeseriesWriter(bw)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range seededIntervals(2, 3) {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		rows, err := ReadTimeseries(bytes.NewReader(file.Bytes()))
		if err != nil || len(rows) != i+1 {
			t.Fatalf("after Write %d the file holds %d rows (err %v), want %d", i+1, len(rows), err, i+1)
		}
	}
}

func TestTimeseriesWriteRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		have   Interval
		column string
	}{
		{"negative count", Interval{Denied: -1}, "denied"},
		{"NaN latency", Interval{P99Ms: math.NaN()}, "p99_ms"},
		{"infinite latency", Interval{MaxMs: math.Inf(1)}, "max_ms"},
		{"negative time", Interval{TS: -1}, "t_s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			w, err := NewTimeseriesWriter(&buf)
			if err != nil {
				t.Fatal(err)
			}
			n := buf.Len()
			err = w.Write(tt.have)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "column "+tt.column+" ") {
				t.Errorf("Write = %v, want ErrInvalid naming column %s", err, tt.column)
			}
			if buf.Len() != n {
				t.Errorf("a rejected row wrote %d bytes", buf.Len()-n)
			}
		})
	}
}

func TestReadTimeseriesDamaged(t *testing.T) {
	t.Parallel()
	good := writeRows(t, seededIntervals(3, 4))
	lines := strings.SplitAfter(string(good), "\n") // header, 4 rows, ""
	row := func(i int) string { return lines[i] }
	tests := []struct {
		name     string
		have     string
		wantRows int
		want     error
		wantText string
	}{
		{"truncated last line", lines[0] + row(1) + row(2) + strings.Join(strings.Split(row(3), ",")[:3], ",") + ",1",
			2, ErrTruncated, "line 4 column 4 (dropped): no end of line"},
		{"last row without newline", lines[0] + row(1) + strings.TrimSuffix(row(2), "\n"), 1, ErrTruncated,
			"line 3 column 33 (wait_short)"},
		{"float in a count column", lines[0] + row(1) + withField(row(2), 2, "1.5"), 1, ErrCorrupt,
			`line 3 column 3 (sent): "1.5" is not a count`},
		{"garbage latency", lines[0] + row(1) + row(2) + withField(row(3), 13, "fast"), 2, ErrCorrupt,
			`line 4 column 14 (p99_ms): "fast" is not a finite number`},
		{"negative count", lines[0] + row(1) + row(2) + "0,-1" + strings.Repeat(",0", 31) + "\n", 2, ErrCorrupt,
			"line 4 column 2 (offered)"},
		{"NaN latency", lines[0] + strings.Repeat("0,", 12) + "NaN" + strings.Repeat(",0", 20) + "\n", 0, ErrCorrupt,
			"line 2 column 13 (p50_ms)"},
		{"garbage dropped share", lines[0] + row(1) + withField(strings.TrimSuffix(row(2), "\n"), 28, "most") + "\n", 1, ErrCorrupt,
			`line 3 column 29 (dropped_share): "most" is not a finite number`},
		{"too few fields", lines[0] + row(1) + "1,2,3\n" + row(3), 1, ErrCorrupt, "line 3: 3 fields, the header has 33"},
		{"garbage time", lines[0] + row(1) + withField(strings.TrimSuffix(row(2), "\n"), 29, "yesterday") + "\n", 1, ErrCorrupt,
			`line 3 column 30 (time_utc): "yesterday" is not an RFC 3339 time`},
		{"empty file", "", 0, ErrTruncated, "line 1: empty file"},
		{"truncated header", "t_s,offered,se", 0, ErrTruncated, `line 1: header cut short after "t_s,offered,se"`},
		{"missing column", strings.Replace(lines[0], ",moved", "", 1), 0, ErrCorrupt, `required column "moved"`},
		{"duplicate column", strings.Replace(lines[0], "faults", "offered", 1), 0, ErrCorrupt,
			`column 26: duplicate column "offered"`},
		{"line too long", lines[0] + row(1) + strings.Repeat("9", 5000) + "\n", 1, ErrCorrupt, "line 3: longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows, err := ReadTimeseries(strings.NewReader(tt.have))
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err = %v, want %v containing %q", err, tt.want, tt.wantText)
			}
			if len(rows) != tt.wantRows {
				t.Errorf("kept %d rows, want %d", len(rows), tt.wantRows)
			}
		})
	}
}

func TestReadTimeseriesLenient(t *testing.T) {
	t.Parallel()
	// The 17 required columns only, CRLF line ends, a blank line and an unknown extra column.
	have := "t_s,offered,sent,dropped,allowed,denied,errors,timeout,moved,ask,noscript,clusterdown," +
		"p50_ms,p99_ms,p999_ms,overspend,central_ops,future\r\n" +
		"1,10,9,1,7,2,0,0,0,0,0,0,0.5,1.5,2.5,1,9,whatever\r\n\r\n"
	rows, err := ReadTimeseries(strings.NewReader(have))
	if err != nil {
		t.Fatal(err)
	}
	want := Interval{TS: 1, Offered: 10, Sent: 9, Dropped: 1, Allowed: 7, Denied: 2, P50Ms: 0.5, P99Ms: 1.5,
		P999Ms: 2.5, Overspend: 1, CentralOps: 9}
	if len(rows) != 1 || rows[0] != want {
		t.Errorf("rows = %+v, want [%+v]", rows, want)
	}
}

// TestReadTimeseriesWithoutLaterColumns reads files written before the optional columns that
// came last: without time_utc, without late and dropped_share too, and without policy_version
// too. Their rows read as they were written, the absent counts 0 (no tariffs, nothing late) and
// the time zero; dropped_share, derived, still reads from the counts.
func TestReadTimeseriesWithoutLaterColumns(t *testing.T) {
	t.Parallel()
	rows := seededIntervals(6, 3)
	for _, tt := range []struct {
		drop  int // trailing columns left out
		clear func(*Interval)
	}{
		{3, func(iv *Interval) { iv.Unreplicated, iv.Unknown, iv.WaitShort = 0, 0, 0 }},
		{4, func(iv *Interval) { iv.Unreplicated, iv.Unknown, iv.WaitShort, iv.Time = 0, 0, 0, time.Time{} }},
		{6, func(iv *Interval) {
			iv.Unreplicated, iv.Unknown, iv.WaitShort, iv.Late, iv.Time = 0, 0, 0, 0, time.Time{}
		}},
		{7, func(iv *Interval) {
			iv.Unreplicated, iv.Unknown, iv.WaitShort, iv.Late, iv.PolicyVersion, iv.Time = 0, 0, 0, 0, 0, time.Time{}
		}},
	} {
		var old strings.Builder
		for i, line := range strings.Split(strings.TrimSuffix(string(writeRows(t, rows)), "\n"), "\n") {
			fields := strings.Split(line, ",")
			if i == 0 && strings.Join(fields[len(fields)-7:], ",") != "policy_version,late,dropped_share,time_utc,unreplicated,unknown,wait_short" {
				t.Fatalf("header %q: want policy_version, late, dropped_share, time_utc, unreplicated, unknown, wait_short last", line)
			}
			old.WriteString(strings.Join(fields[:len(fields)-tt.drop], ",") + "\n")
		}
		have, err := ReadTimeseries(strings.NewReader(old.String()))
		if err != nil {
			t.Fatal(err)
		}
		if len(have) != len(rows) {
			t.Fatalf("read %d rows, want %d", len(have), len(rows))
		}
		for i := range have {
			want := rows[i]
			if want.PolicyVersion == 0 || want.Dropped == 0 || want.Time.IsZero() {
				t.Fatalf("row %d: the seeded rows must carry a version and drops for this test to mean anything", i)
			}
			tt.clear(&want)
			if have[i] != want || have[i].DroppedShare() != Ratio(want.Dropped, want.Offered) {
				t.Errorf("without %d columns, row %d\nhave %+v\nwant %+v", tt.drop, i, have[i], want)
			}
		}
	}
}

// dropped_share is written from the counts: dropped / offered, 0 when nothing was offered.
func TestTimeseriesDroppedShare(t *testing.T) {
	t.Parallel()
	data := writeRows(t, []Interval{{Offered: 3, Sent: 2, Dropped: 1}, {}, {Offered: 4, Dropped: 4}})
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, want := range []string{"0.3333333333333333", "0", "1"} {
		fields := strings.Split(lines[i+1], ",")
		if have := fields[len(fields)-5]; have != want {
			t.Errorf("row %d: dropped_share %s, want %s", i, have, want)
		}
	}
}

func FuzzReadTimeseries(f *testing.F) {
	good := writeRows(f, seededIntervals(4, 3))
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add([]byte(wantHeader + "\n1,2,3\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ReadTimeseries(bytes.NewReader(data))
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
			t.Fatalf("error %v wraps neither ErrCorrupt nor ErrTruncated", err)
		}
		// Whatever was read must write and read back unchanged.
		again, err := ReadTimeseries(bytes.NewReader(writeRows(t, rows)))
		if err != nil {
			t.Fatalf("re-reading %d rows: %v", len(rows), err)
		}
		if len(again) != len(rows) {
			t.Fatalf("re-read %d rows, want %d", len(again), len(rows))
		}
		for i := range rows {
			if again[i] != rows[i] {
				t.Fatalf("row %d changed: %+v -> %+v", i, rows[i], again[i])
			}
		}
	})
}

func BenchmarkTimeseriesWrite(b *testing.B) {
	rows := seededIntervals(5, 64)
	var buf bytes.Buffer
	w, err := NewTimeseriesWriter(&buf)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if buf.Len() > 1<<20 {
			buf.Reset()
		}
		if err := w.Write(rows[i%len(rows)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
