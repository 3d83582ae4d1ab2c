package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseStartAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		have    string
		want    time.Time
		wantErr string
	}{
		{have: "+10s", want: now.Add(10 * time.Second)},
		{have: "2026-01-02T15:05:00Z", want: now.Add(55 * time.Second)},
		{have: "2026-01-02T16:05:00+01:00", want: now.Add(55 * time.Second)},
		{have: "2026-01-02T15:04:04.5Z", want: now.Add(-500 * time.Millisecond)}, // within MaxStartLate
		{have: "2026-01-02T15:04:00Z", wantErr: "already 5s past"},
		{have: "+-3s", wantErr: "not +DURATION"},
		{have: "+soon", wantErr: "not +DURATION"},
		{have: "15:04", wantErr: "not an RFC 3339 time"},
	} {
		have, err := parseStartAt(tc.have, now)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseStartAt(%q) = %v, %v; want an error with %q", tc.have, have, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !have.Equal(tc.want) {
			t.Errorf("parseStartAt(%q) = %v, %v; want %v", tc.have, have, err, tc.want)
		}
	}
}
