package load

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// WriteHTMLPlot writes vegeta's self-contained latency-over-time plot,
// one series per path.
func (r *Report) WriteHTMLPlot(w io.Writer) error {
	if r.plot == nil {
		return errors.New("no time plot collected (WithTimePlot)")
	}
	msg := r.DelayWarning()
	if msg == "" {
		_, err := r.plot.WriteTo(w)
		return err
	}
	// The delayed count goes on the page itself: a plot read without the
	// console output must not look better than the run was.
	var b bytes.Buffer
	if _, err := r.plot.WriteTo(&b); err != nil {
		return err
	}
	page, banner := b.String(), `<p class="idemcheck-delayed" style="color:#b00;font-weight:bold">`+html.EscapeString(msg)+"</p>"
	if i := strings.Index(page, "<body"); i >= 0 && strings.IndexByte(page[i:], '>') > 0 {
		at := i + strings.IndexByte(page[i:], '>') + 1
		page = page[:at] + banner + page[at:]
	} else {
		page = banner + page
	}
	_, err := io.WriteString(w, page)
	return err
}

// maxMergedResults bounds how many results ReadResults decodes.
const maxMergedResults = 50_000_000

// ReadResults merges vegeta gob results files (one per machine of a
// distributed run) into one report. Warm-up results in the files let it
// re-check replay equality; oracle counts are not in the files, so the
// report's Oracle is nil.
func ReadResults(paths []string, verySlow time.Duration, timePlot bool) (*Report, error) {
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
	col := newCollector(verySlow)
	s := &sink{col: col}
	if timePlot {
		s.plot = newTimePlot("idemcheck load report")
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
	if s.plot != nil {
		s.plot.Close()
	}
	if n > 0 && len(col.paths) == 0 && col.foreign > 0 {
		return nil, fmt.Errorf("%d results, none tagged by idemcheck load (was the file written by --results?)", col.foreign)
	}
	rep := col.report()
	rep.plot = s.plot
	return rep, nil
}
