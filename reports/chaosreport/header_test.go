package chaosreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/chaos/drive"
)

// TestHeader: the run's lines say what ran against what, what the proxy
// forwarded, the replicas, every note and what the events source showed;
// text the target supplied goes through redact.
func TestHeader(t *testing.T) {
	res := &drive.Result{Findings: chaos.Findings{Ops: 98, Protocol: "HTTP/1.1"}, Requested: 100, Elapsed: 1234567 * time.Microsecond,
		Proxy: chaos.Counters{Requests: 140, Forwarded: 120}, Replicas: []string{"http://a?token=s3cret", "http://b"}, Kills: 2,
		Notes: []string{"downstream payments: not called"}, Events: &drive.EventsReport{Error: "dial kafka://s3cret@x: refused"}}
	redact := func(s string) string { return strings.ReplaceAll(s, "s3cret", "***") }
	var b bytes.Buffer
	Header(&b, res, "http://127.0.0.1:9", redact)
	want := "chaos: 98/100 operations against http://127.0.0.1:9 over HTTP/1.1 in 1.235s (proxy: 140 requests, 120 forwarded)\n" +
		"replicas: http://a?token=*** http://b; 2 killed and restarted mid-run\n" +
		"note: downstream payments: not called\n" +
		"events: not judged: dial kafka://***@x: refused\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	res.Replicas, res.Notes = nil, nil
	res.Events = &drive.EventsReport{Where: "kafka topic t", Keys: 5, Events: 6, Duplicated: 1, Redeliveries: 2, RedeliveredKeys: 1}
	Header(&b, res, "--target-cmd", redact)
	if want := "events (kafka topic t): 5 keys published 6 events: 0 lost, 1 duplicated (their keys are among the violations below); 2 redeliveries of an event's id on 1 keys (the same execution delivered again, not counted); 0 still changing, not judged\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("events line: got\n%s", b.String())
	}
}
