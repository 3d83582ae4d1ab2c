package trace_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"ratelab/workload"
	"ratelab/workload/trace"
)

func genTrace(t testing.TB, rate float64, d time.Duration, seed uint64) *trace.Trace {
	t.Helper()
	keys, err := workload.NewZipf(100, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := workload.NewMix([]string{"search", "read"}, []float64{3, 1})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Generate(trace.GenOptions{
		Rate: rate, Duration: d, Pacer: "poisson", Seed: seed, Keys: keys, Mix: mix,
		Start: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func encode(t testing.TB, tr *trace.Trace) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := trace.Write(&buf, tr); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gen -> write -> read gives back exactly the generated trace, and the generated requests are
// the scenario engine's stream for the same seed.
func TestGenerateRoundTrip(t *testing.T) {
	t.Parallel()
	tr := genTrace(t, 5000, 2*time.Second, 7)
	if n := len(tr.Requests); n < 9000 || n > 11000 {
		t.Fatalf("%d requests for 5000/s over 2 s", n)
	}
	data := encode(t, tr)
	got, err := trace.ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Requests, tr.Requests) || !reflect.DeepEqual(got.Endpoints, tr.Endpoints) ||
		got.TenantPrefix != tr.TenantPrefix || !got.Start.Equal(tr.Start) {
		t.Fatalf("round trip differs: header %+v vs %+v, %d vs %d requests", got.Header, tr.Header, len(got.Requests), len(tr.Requests))
	}
	t.Logf("%d requests in %d bytes (%.2f bytes/request)", len(tr.Requests), len(data), float64(len(data))/float64(len(tr.Requests)))

	keys, _ := workload.NewZipf(100, 0.99)
	mix, _ := workload.NewMix([]string{"search", "read"}, []float64{3, 1})
	s := workload.NewStream(7, keys, mix)
	for i, r := range tr.Requests[:1000] {
		tenant, ep := s.Next()
		if uint64(r.Tenant) != tenant || int(r.Endpoint) != ep {
			t.Fatalf("request %d: tenant %d endpoint %d, the engine's stream draws %d %d", i, r.Tenant, r.Endpoint, tenant, ep)
		}
	}
	if again := genTrace(t, 5000, 2*time.Second, 7); !reflect.DeepEqual(again.Requests, tr.Requests) {
		t.Error("the same seed generated a different trace")
	}
}

// A file cut anywhere yields ErrTruncated (or a header error) and a prefix of the requests.
func TestTruncatedKeepsPrefix(t *testing.T) {
	t.Parallel()
	tr := genTrace(t, 3000, 2*time.Second, 1) // > 1 block
	data := encode(t, tr)
	for _, cut := range []int{0, 5, 30, 200, len(data) / 2, len(data) * 3 / 4, len(data) - 3, len(data) - 1} {
		got, err := trace.ReadAll(bytes.NewReader(data[:cut]))
		if !errors.Is(err, trace.ErrTruncated) && !(cut < 8 && errors.Is(err, trace.ErrCorrupt)) {
			t.Errorf("cut at %d of %d: error %v, want ErrTruncated", cut, len(data), err)
			continue
		}
		if got == nil {
			continue
		}
		if n := len(got.Requests); n > len(tr.Requests) || !reflect.DeepEqual(got.Requests, tr.Requests[:n]) {
			t.Errorf("cut at %d: the %d requests read are not a prefix of the trace", cut, n)
		}
		if cut == len(data)*3/4 && len(got.Requests) < trace.MaxBlockRequests {
			t.Errorf("cut in the second block: only %d requests kept, want at least the first block", len(got.Requests))
		}
		if cut == len(data)-1 && len(got.Requests) != len(tr.Requests) {
			t.Errorf("cut in the end marker: %d of %d requests kept", len(got.Requests), len(tr.Requests))
		}
	}
}

// A damaged byte in the second block is caught by its checksum; the first block is kept.
func TestCorruptBlockKeepsEarlierBlocks(t *testing.T) {
	t.Parallel()
	tr := genTrace(t, 3000, 2*time.Second, 2)
	data := encode(t, tr)
	bad := append([]byte(nil), data...)
	bad[len(bad)*3/4] ^= 0x40
	got, err := trace.ReadAll(bytes.NewReader(bad))
	if !errors.Is(err, trace.ErrCorrupt) {
		t.Fatalf("error %v, want ErrCorrupt", err)
	}
	if n := len(got.Requests); n < trace.MaxBlockRequests || n >= len(tr.Requests) || !reflect.DeepEqual(got.Requests, tr.Requests[:n]) {
		t.Fatalf("kept %d of %d requests, want the undamaged blocks as a prefix", n, len(tr.Requests))
	}
	if _, err := trace.ReadAll(strings.NewReader("GIF89a not a trace")); !errors.Is(err, trace.ErrCorrupt) || !strings.Contains(err.Error(), "not a ratelab trace") {
		t.Errorf("a foreign file: %v", err)
	}
}

func TestWriterRefusesDisorder(t *testing.T) {
	t.Parallel()
	w, err := trace.NewWriter(&bytes.Buffer{}, trace.Header{Endpoints: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(trace.Request{At: time.Second, Cost: 1}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []trace.Request{{At: time.Millisecond}, {At: 2 * time.Second, Endpoint: 1}} {
		if err := w.Write(r); !errors.Is(err, trace.ErrInvalid) {
			t.Errorf("Write(%+v) = %v, want ErrInvalid", r, err)
		}
	}
}

func TestImportCSV(t *testing.T) {
	t.Parallel()
	const log = `time,tenant,endpoint,cost
2026-05-01T12:00:01.5Z,alice,/search,2
2026-05-01T12:00:00Z,bob,/read,
2026-05-01T12:00:01.5Z,bob,/search,1
1777636803.25,alice,/read,1
`
	tr, err := trace.ImportCSV(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	// Unix time 1777636803.25 is 3.25 s after the earliest row (bob's, at 12:00:00Z).
	want := []trace.Request{
		{At: 0, Tenant: 1, Endpoint: 1, Cost: 1},
		{At: 1500 * time.Millisecond, Tenant: 0, Endpoint: 0, Cost: 2},
		{At: 1500 * time.Millisecond, Tenant: 1, Endpoint: 0, Cost: 1},
		{At: 3250 * time.Millisecond, Tenant: 0, Endpoint: 1, Cost: 1},
	}
	if !reflect.DeepEqual(tr.Requests, want) {
		t.Errorf("requests %+v\nwant %+v", tr.Requests, want)
	}
	if !reflect.DeepEqual(tr.Tenants, []string{"alice", "bob"}) || !reflect.DeepEqual(tr.Endpoints, []string{"/search", "/read"}) {
		t.Errorf("tenants %v endpoints %v", tr.Tenants, tr.Endpoints)
	}
	if !tr.Start.Equal(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("start %v", tr.Start)
	}
	got, err := trace.ReadAll(bytes.NewReader(encode(t, tr)))
	if err != nil || !reflect.DeepEqual(got.Requests, tr.Requests) || got.TenantName(1) != "bob" {
		t.Errorf("imported trace does not round-trip: %v", err)
	}
	_, err = trace.ImportCSV(strings.NewReader("2026-05-01T12:00:00Z,a,b\nyesterday,a,b\n"))
	if !errors.Is(err, trace.ErrCorrupt) || !strings.Contains(err.Error(), "line 2 column 1") {
		t.Errorf("bad time: %v, want the line and column named", err)
	}
}

// FuzzDecode: any input either fails with an error (never a panic or a huge allocation) or is
// a trace that writes back to an equal trace.
func FuzzDecode(f *testing.F) {
	keys, _ := workload.NewZipf(10, 0.99)
	small, err := trace.Generate(trace.GenOptions{Rate: 50, Duration: time.Second, Seed: 1, Keys: keys})
	if err != nil {
		f.Fatal(err)
	}
	data := encode(f, small)
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := trace.ReadAll(bytes.NewReader(in))
		if err != nil {
			return
		}
		out := encode(t, tr)
		again, err := trace.ReadAll(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("a trace that read cleanly does not read back after writing: %v", err)
		}
		if !reflect.DeepEqual(again.Requests, tr.Requests) || !reflect.DeepEqual(again.Header, tr.Header) {
			t.Fatal("a trace changed after write and read")
		}
	})
}
