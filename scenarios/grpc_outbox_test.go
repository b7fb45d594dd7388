package scenarios_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	"github.com/idemcheck/idemcheck/reference/outbox"
	"github.com/idemcheck/idemcheck/scenarios"
)

// grpcOutboxLease is the reference gRPC service's lease in these tests:
// the slow variant (grpcOutboxSlow) outlives it by more than twice the
// lease cases' margin, so outbox/lease-takeover runs.
const (
	grpcOutboxLease = 400 * time.Millisecond
	grpcOutboxSlow  = 1200 * time.Millisecond
)

// grpcOutboxRun serves the reference gRPC service (and the HTTP reference
// beside it, whose relay publishes the store's outbox) publishing to
// broker ("kafka" or "nats"), with grpcDefects on the service, and runs
// the outbox cases on it over gRPC. carrier "aip" is CreatePayment's
// request_id, its events attributed by the idempotency-key header and
// held against the effects oracle; "aep" CreateRefund's AEP-155 key, its
// events attributed by the marker token idemcheck writes into the
// payment's description (which the event's data echoes) and the only
// oracle.
func grpcOutboxRun(t *testing.T, broker, carrier string, grpcDefects ...reference.Defect) *scenarios.Report {
	t.Helper()
	var pubURL, events string
	switch broker {
	case "kafka":
		brokers, _ := testenv.RequireKafka(t)
		topic := testenv.KafkaTopic(t, brokers, 2)
		pubURL = "kafka://" + strings.Join(brokers, ",") + "/" + topic
		events = fmt.Sprintf("kafka: {brokers: [%s], topic: %s}", strings.Join(brokers, ", "), topic)
	case "nats":
		url, _ := testenv.RequireNATS(t)
		stream, subject := testenv.NATSStream(t, url)
		subject += ".payments"
		pubURL = url + "/" + stream + "?subject=" + subject
		events = fmt.Sprintf("nats: {url: %q, stream: %s, subject: %s}", url, stream, subject)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub, err := outbox.Open(ctx, pubURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() }) // after the app's relay stopped (registered first, runs last)
	httpBase, g := demotest.GRPCServer(t, demo.Options{TTL: 3 * time.Second, Lease: grpcOutboxLease, Events: pub}, grpcDefects)
	grpcBase := demotest.ServeGRPCServer(t, g)

	rpc, key, preset, oracle, marker, eventsKey := "CreatePayment", "{field: request_id}", "aip-155",
		fmt.Sprintf(`oracle: {url: "%s/v1/effects?key={key}", pointer: /executions}`, httpBase), "",
		"{header: "+outbox.HeaderKey+"}"
	if carrier == "aep" {
		rpc, key, preset, oracle, marker, eventsKey = "CreateRefund", "{field: idempotency_key, first_sent: true}", "aep-155",
			"", "\n    marker: /payment/description", "{pointer: /data/description}"
	}
	cfg := fmt.Sprintf(`base_url: %s
key: %s
ttl: 3s
lease: %s
principals:
  - {name: alice, metadata: {authorization: Bearer alice}}
%s
events:
  %s
  key: %s
  event_id: /id
  resource_id: /data/name
  settle: %s
operations:
  - name: payments
    rpc: idemcheck.reference.v1.PaymentService/%s
    body: {parent: accounts/a1, payment: {amount: 1000, currency: USD, description: ""}}
    id_pointer: /name%s
    mutations: [{name: changed-amount, patch: {payment: {amount: 1001}}}]
    variants:
      slow: {patch: {knobs: {delay_ms: %d}}, duration: %s}
      invalid: {patch: {payment: {amount: -1}}, status: INVALID_ARGUMENT}
      transient_error: {patch: {knobs: {fail: transient}}, status: UNAVAILABLE}
      business_error: {patch: {knobs: {fail: decline}}, status: FAILED_PRECONDITION}
profile:
  preset: %s
  overrides: {key_required: true, missing_status: INVALID_ARGUMENT, mismatch_status: INVALID_ARGUMENT, in_flight_status: ABORTED, block_ok: false}
`, grpcBase, key, grpcOutboxLease, oracle, events, eventsKey, outboxSettle, rpc, marker, grpcOutboxSlow.Milliseconds(), grpcOutboxSlow, preset)
	tg, p, err := apispec.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatalf("%v\n%s", err, cfg)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer rcancel()
	rep, err := scenarios.Run(rctx, tg, p, scenarios.RunOptions{Run: []string{"outbox/**"}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// replayedAnswers counts r's successful answers the reference marked as
// replays (its idempotent-replayed trailer).
func replayedAnswers(r scenarios.Result) int {
	n := 0
	for _, x := range r.Exchanges {
		if x.Response != nil && x.Response.Status/100 == 2 && x.Response.Header.Get(grpcref.ReplayedTrailer) == "true" {
			n++
		}
	}
	return n
}

// The outbox cases over gRPC, on Kafka and NATS JetStream, by the key's
// header beside the effects oracle and by the marker token as the only
// oracle: the correct reference passes every one (lease-takeover too: the
// slow variant outlives the lease), and event-on-replay fails exactly the
// cases in which the service answered a 2xx as a replay — always
// none-for-replay and lost-answer-retry (whose retries replay the answer
// the proxy dropped), same-key-burst when one of the burst was replayed
// rather than refused in flight (timing decides; the trailer tells).
func TestGRPCOutbox(t *testing.T) {
	t.Parallel() // waits on slow variants, TTLs or a broker: overlaps the rest
	// Every event defect the gRPC service plays has its rows here
	// (TestGRPCDefects leaves them out: they need a broker).
	for _, d := range reference.Defects() {
		if d.Defect.NeedsEvents() && grpcref.Supports(d.Defect) && d.Defect != reference.EventOnReplay {
			t.Errorf("%s: the gRPC reference plays it, and no row here checks it is caught", d.Defect)
		}
	}
	for _, row := range []struct {
		broker, carrier string
		defect          reference.Defect
	}{
		{"kafka", "aip", ""},
		{"kafka", "aip", reference.EventOnReplay},
		{"nats", "aep", ""},
		{"nats", "aep", reference.EventOnReplay},
	} {
		t.Run(fmt.Sprintf("%s/%s/defect=%s", row.broker, row.carrier, row.defect), func(t *testing.T) {
			var defects []reference.Defect
			if row.defect != "" {
				defects = append(defects, row.defect)
			}
			rep := grpcOutboxRun(t, row.broker, row.carrier, defects...)
			if len(rep.Notes) > 0 {
				t.Errorf("notes %q: want none (the start check finds each call's event)", rep.Notes)
			}
			got := failing(t, rep)
			var want []string
			for _, r := range rep.Results {
				expect := scenarios.Pass
				if row.defect == reference.EventOnReplay && replayedAnswers(r) > 0 {
					expect = scenarios.Fail
					want = append(want, r.ID)
				}
				// A retry the machine's load sent after the slow original
				// ended did not overlap it: the case says so, judging nothing.
				if r.ID == "outbox/fresh-id-after-expiry" && row.carrier == "aep" && r.Status == scenarios.Skip && strings.Contains(r.Reason, "AEP-155") {
					continue
				}
				if r.ID == "outbox/lease-takeover" && r.Status == scenarios.Inconclusive && strings.Contains(r.Reason, "could not overlap") {
					t.Logf("%s: %s", r.Name(), r.Reason)
					continue
				}
				if r.Status != expect {
					t.Errorf("%s: %s, want %s (%d answers replayed): %s %s", r.Name(), r.Status, expect, replayedAnswers(r), r.Observed, r.Reason)
				}
				if r.ID != "outbox/none-for-rejected" && r.ID != "outbox/none-for-failed" && r.ID != "outbox/none-for-declined" && len(r.Events) == 0 {
					t.Errorf("%s: no events listed, want the key's events", r.Name())
				}
			}
			if len(rep.Results) != 12 {
				t.Errorf("%d results, want the 12 outbox cases", len(rep.Results))
			}
			if row.defect == reference.EventOnReplay {
				for _, id := range []string{"outbox/lost-answer-retry", "outbox/none-for-replay"} {
					if !slices.Contains(got, id) {
						t.Errorf("caught by %v, want %s among them", got, id)
					}
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, slices.Compact(want)) {
				t.Errorf("failed %v, want %v", got, want)
			}
		})
	}
}
