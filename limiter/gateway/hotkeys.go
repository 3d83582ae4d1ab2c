package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"
)

// DefaultHotKeys is how many keys a HotKeys sketch tracks by default. Any key that takes more than
// 1/DefaultHotKeys of the requests is guaranteed to be among them.
const DefaultHotKeys = 64

// HotKeysPath is the route of a Server that reports its HotKeys as JSON.
const HotKeysPath = "/debug/hotkeys"

// HotKeys is a Space-Saving top-K sketch (Metwally, Agrawal and El Abbadi, "Efficient
// Computation of Frequent and Top-k Elements in Data Streams") of the keys (tenant, endpoint) a
// gateway decides: at most K counters, so its memory does not grow with the number of tenants.
// Every key seen more than N/K times in N requests holds a counter, and a counter overestimates
// its key's true count by at most its Error (the count of the key it replaced). One gateway sees
// its own traffic; the hottest key of the fleet is the one hot in most of them, and the hottest
// Redis Cluster shard is the one whose slots hold it.
//
// It is written here rather than taken from a library: the heavy-hitter sketches in Go's
// ecosystem are either unmaintained or count bytes, not requests, and the algorithm is a few
// lines. The lock is per sketch; a decision costs one map lookup under it (a full table also
// scans K counters when a new key displaces the smallest, which is the rare case for a skewed
// stream).
//
// Reports never contain a tenant or an API key: keys are shown as the first 12 hex digits of
// their SHA-256, which identifies a hot key across reports without revealing it.
type HotKeys struct {
	mu      sync.Mutex
	k       int
	total   int64
	since   time.Time
	entries []hotEntry
	index   map[hotKey]int // key -> position in entries
}

type hotKey struct{ tenant, endpoint string }

type hotEntry struct {
	key          hotKey
	count, error int64
}

// NewHotKeys returns a sketch tracking k keys (DefaultHotKeys when k <= 0).
func NewHotKeys(k int) *HotKeys {
	if k <= 0 {
		k = DefaultHotKeys
	}
	return &HotKeys{k: k, since: time.Now(), entries: make([]hotEntry, 0, k), index: make(map[hotKey]int, k)}
}

// Observe counts one request of tenant on endpoint.
func (h *HotKeys) Observe(tenant, endpoint string) {
	key := hotKey{tenant, endpoint}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total++
	if i, ok := h.index[key]; ok {
		h.entries[i].count++
		return
	}
	if len(h.entries) < h.k {
		h.index[key] = len(h.entries)
		h.entries = append(h.entries, hotEntry{key: key, count: 1})
		return
	}
	// Space-Saving: the new key takes over the smallest counter, inheriting its count as error.
	m := 0
	for i := range h.entries {
		if h.entries[i].count < h.entries[m].count {
			m = i
		}
	}
	delete(h.index, h.entries[m].key)
	old := h.entries[m].count
	h.entries[m] = hotEntry{key: key, count: old + 1, error: old}
	h.index[key] = m
}

// HotKey is one reported key: its hashed identity, endpoint, estimated count, the bound on the
// estimate's excess, and its estimated share of all requests the sketch saw.
type HotKey struct {
	Key      string  `json:"key"`
	Endpoint string  `json:"endpoint"`
	Count    int64   `json:"count"`
	Error    int64   `json:"error"`
	Share    float64 `json:"share"`
}

// HotKeysReport is what Top returns and HotKeysPath serves.
type HotKeysReport struct {
	Since    time.Time `json:"since"`
	Requests int64     `json:"requests"`
	// Guaranteed is the count above which a key is certain to be listed (Requests / K).
	Guaranteed int64    `json:"guaranteed_above"`
	Keys       []HotKey `json:"keys"`
}

// Top returns the n keys with the largest estimated counts, largest first (all when n <= 0).
func (h *HotKeys) Top(n int) HotKeysReport {
	h.mu.Lock()
	entries := append([]hotEntry(nil), h.entries...)
	rep := HotKeysReport{Since: h.since, Requests: h.total, Guaranteed: h.total / int64(h.k)}
	h.mu.Unlock()
	sort.Slice(entries, func(i, j int) bool { return entries[i].count > entries[j].count })
	if n > 0 && n < len(entries) {
		entries = entries[:n]
	}
	rep.Keys = make([]HotKey, len(entries))
	for i, e := range entries {
		rep.Keys[i] = HotKey{Key: HashKey(e.key.tenant), Endpoint: e.key.endpoint, Count: e.count, Error: e.error}
		if rep.Requests > 0 {
			rep.Keys[i].Share = float64(e.count) / float64(rep.Requests)
		}
	}
	return rep
}

// HashKey is how a tenant or API key appears in reports and logs: "sha256:" and the first 12 hex
// digits of its SHA-256.
func HashKey(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// Handler serves Top(0) as JSON (the HotKeysPath route).
func (h *HotKeys) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b, err := json.MarshalIndent(h.Top(0), "", "  ")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, http.StatusOK, append(b, '\n'))
	})
}
