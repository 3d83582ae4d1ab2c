package engine

import (
	"fmt"
	"strings"
)

// CutRegion cuts the region named name off from the others until RestoreRegion: its links are
// cut, so in design global its gateways' decisions fail (the endpoints' fail policies answer,
// or they are errors) and, if it is the home region, every other region's do; in design
// rebalance its reports and updates are lost, so its shares freeze and the other regions share
// the rest; in split and independent nothing changes (no decision leaves its region).
func (s *Session) CutRegion(name string) error { return s.setRegionCut(name, true) }

// RestoreRegion undoes CutRegion: new connections go through again and the next rebalance
// round hears from the region.
func (s *Session) RestoreRegion(name string) error { return s.setRegionCut(name, false) }

func (s *Session) setRegionCut(name string, cut bool) error {
	rr := s.regions
	if rr == nil {
		return fmt.Errorf("region %q: the scenario has no regions", name)
	}
	i := -1
	for k, n := range rr.names {
		if n == name {
			i = k
		}
	}
	if i < 0 {
		return fmt.Errorf("region %q: no such region; the regions are %s", name, strings.Join(rr.names, ", "))
	}
	rr.regions[i].cut.Store(cut)
	home := rr.regions[0].cut.Load()
	for _, rg := range rr.regions[1:] {
		if rg.links != nil {
			rg.links.setCut(home || rg.cut.Load())
		}
	}
	return nil
}
