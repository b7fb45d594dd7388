package words

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// NotEnoughEvidence is the verdict of a run that judged too little to
// say pass (exit 5 unless --allow-incomplete), in every report.
const NotEnoughEvidence = "not enough evidence"

// Duration is a run's, a phase's or an exchange's length as the reports
// print it: rounded to the millisecond ("1.234s", "250ms").
func Duration(d time.Duration) string { return d.Round(time.Millisecond).String() }

// Counts is a tally as people read it, "drop-response 239, duplicate 74"
// sorted by name, instead of Go's map[drop-response:239 ...]; an empty
// tally is "none".
func Counts[N int | int64 | uint64](m map[string]N) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// JSON writes v indented by two spaces and a newline: the --json form of
// a chaos run, an analyzed history and a load run.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
