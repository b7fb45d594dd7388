package load

import (
	"maps"
	"sort"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/internal/grpccode"
)

// HDR range: 1 µs to 2 min at 3 significant digits (0.1% resolution).
const (
	hdrMin    = 1
	hdrMax    = int64(2 * time.Minute / time.Microsecond)
	hdrDigits = 3
)

// pathMetrics accumulates one path's results.
type pathMetrics struct {
	hist        *hdrhistogram.Histogram // latency in µs
	requests    uint64
	success     uint64
	verySlow    uint64
	codes       map[uint16]uint64
	grpcCodes   map[string]uint64 // gRPC answers by code name (Grpc-Status)
	errors      map[string]uint64
	first, last time.Time // first send, last send
	lastEnd     time.Time
}

func newPathMetrics() *pathMetrics {
	return &pathMetrics{
		hist:      hdrhistogram.New(hdrMin, hdrMax, hdrDigits),
		codes:     map[uint16]uint64{},
		grpcCodes: map[string]uint64{},
		errors:    map[string]uint64{},
	}
}

// maxErrorKinds bounds the distinct error strings kept per path.
const maxErrorKinds = 20

func (m *pathMetrics) add(r *vegeta.Result, verySlow time.Duration) {
	m.requests++
	us := r.Latency.Microseconds()
	if us < hdrMin {
		us = hdrMin
	}
	if us > hdrMax {
		us = hdrMax
	}
	_ = m.hist.RecordValue(us) // in range by construction
	if r.Latency >= verySlow {
		m.verySlow++
	}
	m.codes[r.Code]++
	if gs := r.Headers.Get("Grpc-Status"); gs != "" {
		n, _ := strconv.Atoi(gs)
		m.grpcCodes[grpccode.Name(n)]++
	}
	if r.Code >= 200 && r.Code < 400 {
		m.success++
	}
	if r.Error != "" {
		if _, seen := m.errors[r.Error]; seen || len(m.errors) < maxErrorKinds {
			m.errors[r.Error]++
		} else {
			m.errors["(other errors)"]++
		}
	}
	if m.first.IsZero() || r.Timestamp.Before(m.first) {
		m.first = r.Timestamp
	}
	if r.Timestamp.After(m.last) {
		m.last = r.Timestamp
	}
	if end := r.End(); end.After(m.lastEnd) {
		m.lastEnd = end
	}
}

// Latency holds latency figures in milliseconds.
type Latency struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99.9"`
	Max  float64 `json:"max"`
}

// PathStats is one path's column of the report.
type PathStats struct {
	Requests uint64 `json:"requests"`
	// Rate is requests sent per second between the first and last send.
	Rate float64 `json:"rate"`
	// Throughput is successful (2xx/3xx) responses per second between the
	// first send and the last response.
	Throughput  float64           `json:"throughput"`
	Success     float64           `json:"success"`
	StatusCodes map[string]uint64 `json:"status_codes"`
	// GRPCCodes are a gRPC run's answers by code name (OK, ABORTED), as
	// ghz reports them; StatusCodes holds their HTTP statuses.
	GRPCCodes map[string]uint64 `json:"grpc_codes,omitempty"`
	Errors    map[string]uint64 `json:"errors,omitempty"`
	// VerySlow counts requests at or above the very-slow bound
	// (Summary.VerySlowMs); read percentiles beside it.
	VerySlow   uint64     `json:"very_slow"`
	LatencyMs  Latency    `json:"latency_ms"`
	Percentile []Quantile `json:"percentiles"`
	hist       *hdrhistogram.Histogram
}

// Quantile is one point of the percentile spectrum.
type Quantile struct {
	Percentile float64 `json:"percentile"`
	Ms         float64 `json:"ms"`
}

// spectrum is the percentile ladder of the HDR plot and JSON.
var spectrum = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100}

func ms(us int64) float64 { return float64(us) / 1000 }

func (m *pathMetrics) stats() *PathStats {
	s := &PathStats{Requests: m.requests, StatusCodes: map[string]uint64{}, VerySlow: m.verySlow, hist: m.hist}
	for code, n := range m.codes {
		s.StatusCodes[strconv.Itoa(int(code))] = n
	}
	if len(m.grpcCodes) > 0 {
		s.GRPCCodes = maps.Clone(m.grpcCodes)
		if n := m.codes[0]; n > 0 { // no answer at all: no code
			s.GRPCCodes["(no answer)"] = n
		}
	}
	if len(m.errors) > 0 {
		s.Errors = m.errors
	}
	if m.requests == 0 {
		return s
	}
	if span := m.last.Sub(m.first).Seconds(); span > 0 && m.requests > 1 {
		s.Rate = float64(m.requests-1) / span
	}
	if span := m.lastEnd.Sub(m.first).Seconds(); span > 0 {
		s.Throughput = float64(m.success) / span
	}
	s.Success = float64(m.success) / float64(m.requests)
	h := m.hist
	s.LatencyMs = Latency{
		Min:  ms(h.Min()),
		Mean: h.Mean() / 1000,
		P50:  ms(h.ValueAtQuantile(50)),
		P90:  ms(h.ValueAtQuantile(90)),
		P99:  ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)),
		Max:  ms(h.Max()),
	}
	for _, q := range spectrum {
		s.Percentile = append(s.Percentile, Quantile{Percentile: q, Ms: ms(h.ValueAtQuantile(q))})
	}
	return s
}

// LatencyAt is the latency in ms at percentile q (0 to 100) of the
// path's histogram; false when the stats carry none (read back from JSON).
func (s *PathStats) LatencyAt(q float64) (float64, bool) {
	if s.hist == nil {
		return 0, false
	}
	return ms(s.hist.ValueAtQuantile(q)), true
}

// sortedKeys returns a map's keys in order, for stable output.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
