package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPickSlots(t *testing.T) {
	t.Parallel()
	owned := []SlotRange{{Start: 0, End: 3}, {Start: 10, End: 12}}
	tests := []struct {
		name  string
		n     int
		r     *SlotRange
		want  []int
		error string
	}{
		{"highest one", 1, nil, []int{12}, ""},
		{"spans two ranges", 5, nil, []int{2, 3, 10, 11, 12}, ""},
		{"all", 7, nil, []int{0, 1, 2, 3, 10, 11, 12}, ""},
		{"too many", 8, nil, nil, "serves only 7 slots (0-3,10-12)"},
		{"range", 0, &SlotRange{Start: 1, End: 2}, []int{1, 2}, ""},
		{"range not owned", 0, &SlotRange{Start: 3, End: 4}, nil, "slot 4 is not served"},
	}
	for _, tt := range tests {
		have, err := pickSlots(tt.n, owned, tt.r)
		switch {
		case tt.error != "" && (err == nil || !strings.Contains(err.Error(), tt.error)):
			t.Errorf("%s: pickSlots = %v, %v; want an error containing %q", tt.name, have, err, tt.error)
		case tt.error == "" && (err != nil || !slices.Equal(have, tt.want)):
			t.Errorf("%s: pickSlots = %v, %v; want %v", tt.name, have, err, tt.want)
		}
	}
	// Unsorted ranges: the highest slots are still taken from the top.
	if have, _ := pickSlots(2, []SlotRange{{Start: 10, End: 12}, {Start: 100, End: 100}, {Start: 0, End: 1}}, nil); !slices.Equal(have, []int{12, 100}) {
		t.Errorf("pickSlots(2) of unsorted ranges = %v, want [12 100]", have)
	}
}

func TestMigrateConfigValidate(t *testing.T) {
	t.Parallel()
	ok := migrateConfig{batch: DefaultMigrateBatch, timeout: DefaultMigrateTimeout}
	with := func(f func(*migrateConfig)) migrateConfig { c := ok; f(&c); return c }
	tests := []struct {
		name string
		have migrateConfig
		n    int
		want []string // nil: valid
	}{
		{"defaults", ok, 1, nil},
		{"range with n 0", with(func(c *migrateConfig) { c.slots = &SlotRange{Start: 5, End: 9} }), 0, nil},
		{"range with its length", with(func(c *migrateConfig) { c.slots = &SlotRange{Start: 5, End: 9} }), 5, nil},
		{"n 0", ok, 0, []string{"n = 0"}},
		{"range backwards", with(func(c *migrateConfig) { c.slots = &SlotRange{Start: 9, End: 5} }), 0, []string{"WithSlotRange(9-5)"}},
		{"range past the end", with(func(c *migrateConfig) { c.slots = &SlotRange{Start: 0, End: TotalSlots} }), 0, []string{"end <= 16383"}},
		{"every problem at once", migrateConfig{batch: -1, timeout: time.Microsecond, pause: -1, askWindow: -1}, -2,
			[]string{"n = -2", "WithBatch(-1)", "WithMigrateTimeout(1µs)", "WithSlotPause(-1ns)", "WithAskWindow(-1ns)"}},
	}
	for _, tt := range tests {
		err := tt.have.validate(tt.n)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: validate = %v, want nil", tt.name, err)
			}
			continue
		}
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: validate = %v, want it to contain %q", tt.name, err, w)
			}
		}
	}
}
