package load

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// maxMergedResults bounds how many results ReadResults decodes.
const maxMergedResults = 50_000_000

// ReadResults merges vegeta gob results files (one per machine of a
// distributed run) into one report. Warm-up results in the files let it
// re-check replay equality; oracle counts are not in the files, so the
// report's Oracle is nil. ttl is the target's key lifetime (0: forever or
// unknown) and margin the profile's margin before it, for the replay
// check; the files carry the sums of the replay forms the run compared.
func ReadResults(paths []string, verySlow, ttl, margin time.Duration, timePlot bool) (*Summary, error) {
	if len(paths) == 0 {
		return nil, errors.New("no results files")
	}
	decs := make([]vegeta.Decoder, 0, len(paths))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		dec := vegeta.DecoderFor(f)
		if dec == nil {
			return nil, fmt.Errorf("%s: not a vegeta results file (gob, json or csv)", p)
		}
		decs = append(decs, dec)
	}
	col := newCollector(verySlow, ttl, margin)
	s := &sink{col: col}
	if timePlot {
		s.plot = NewTimePlot()
	}
	dec := vegeta.NewRoundRobinDecoder(decs...)
	n := 0
	for ; n < maxMergedResults; n++ {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("decoding results: %w", err)
		}
		s.add(&r)
	}
	if n > 0 && len(col.paths) == 0 && col.foreign > 0 {
		return nil, fmt.Errorf("%d results, none tagged by idemcheck load (was the file written by --results?)", col.foreign)
	}
	rep := col.report()
	rep.plot = s.plot
	return rep, nil
}
