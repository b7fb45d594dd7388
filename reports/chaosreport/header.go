package chaosreport

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemcheck/idemcheck/chaos/drive"
	"github.com/idemcheck/idemcheck/reports/internal/words"
)

// Header writes what a chaos run did, the lines before its findings'
// summary (Console): the operations against the target and what the proxy
// forwarded, the replicas killed, the notes, and what the events source
// showed. against names the target as a report may; redact takes the
// target's secrets out of text the target or a connection supplied.
func Header(w io.Writer, res *drive.Result, against string, redact func(string) string) {
	fmt.Fprintf(w, "chaos: %d/%d operations against %s over %s in %s (proxy: %d requests, %d forwarded)\n",
		res.Ops, res.Requested, against, res.Protocol, words.Duration(res.Elapsed), res.Proxy.Requests, res.Proxy.Forwarded)
	if len(res.Replicas) > 0 {
		fmt.Fprintf(w, "replicas: %s; %d killed and restarted mid-run\n", redact(strings.Join(res.Replicas, " ")), res.Kills)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if e := res.Events; e != nil {
		if e.Error != "" {
			fmt.Fprintf(w, "events: not judged: %s\n", redact(e.Error))
		} else {
			fmt.Fprintf(w, "events (%s): %d keys published %d events: %d lost, %d duplicated (their keys are among the violations below); %d redeliveries of an event's id on %d keys (the same execution delivered again, not counted); %d still changing, not judged\n",
				e.Where, e.Keys, e.Events, e.Lost, e.Duplicated, e.Redeliveries, e.RedeliveredKeys, e.Unsettled)
		}
	}
}
