package scenarios_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// matrixFamilies are the families whose verdicts this table pins exactly;
// failures in other families are logged (their owners add rows).
var matrixFamilies = []string{"concurrent", "crash", "errors", "expiry", "fidelity", "method", "mismatch", "missing", "outbox", "problem", "replay", "scope", "security", "syntax"}

// defectMatrix: each defect of the reference catalog, the case IDs that
// must catch it (fail, or warn under strict) and why. A row with pending
// set is caught by a family that is not in the catalog yet.
var defectMatrix = []struct {
	defect string
	// strict: the defect breaks only a SHOULD, so it shows as warn.
	strict bool
	// blockForbidden: judge under block_ok=false (the reference documents
	// 409 for in-flight duplicates; blocking is legal under plain ietf).
	blockForbidden bool
	// noCache5xx: judge under cache_5xx=false (seeds), where a replayed
	// transient 5xx is a defect; ietf leaves it open.
	noCache5xx bool
	// want is exactly the set of this table's case IDs that catch it.
	want []string
	// anyOf replaces want for a timing-dependent defect: at least one of
	// these catches it, whichever way the race went.
	anyOf []string
	// maybe lists cases that may also catch it, depending on timing; they
	// are left out of the comparison with want.
	maybe []string
	// clean: the defect shows only across replicas; one replica must pass
	// the whole catalog (the replicas/ family catches it, see
	// cmd/idemcheck TestReplicaFamily).
	clean bool
	// events: the reference publishes through its outbox to a Kafka topic
	// that the target's events: reads (eventsDemo); the defect breaks
	// only the events.
	events  bool
	pending string
	why     string
}{
	{defect: "no-fingerprint", want: []string{"mismatch/changed-body", "mismatch/repeat-fails-again"}, maybe: []string{"concurrent/changed-body-in-flight"},
		why: "a changed body under a used key replays the old response (mismatch/added-field only warns: an unknown member may be outside a legal partial fingerprint); concurrent/changed-body-in-flight too when a stall delivers its changed body after the original completed (seen at 6x oversubscription)"},
	{defect: "check-then-insert", anyOf: []string{"concurrent/same-key-burst"},
		why: "same-key requests whose lookups fall in the 1 ms before the insert all execute: the burst's rounds catch it (>= 99 of 100 runs, docs/conformance-engine.md); expiry/expired-key-burst, one round after expiry, usually too"},
	{defect: "conflict-as-500", strict: true, want: []string{"concurrent/in-flight-conflict"},
		why: "every request that loses the race for its key (in flight) gets 500 instead of 409: the SHOULD case judges it; the MUST cases that see it (in-flight-offsets, the bursts) held their MUST and record it beside their pass, since a SHOULD never fails a MUST case"},
	{defect: "release-before-store", anyOf: []string{"concurrent/same-key-burst"}, maybe: []string{"expiry/edge-burst", "expiry/expired-key-burst", "concurrent/in-flight-offsets"},
		why: "the claim is released 5 ms before the response is stored: a burst round whose requests are still arriving when the first completes executes again (the rounds after the slow one); the slow rounds' requests all meet the claim"},
	{defect: "lease-as-millis", want: []string{"concurrent/changed-body-in-flight", "concurrent/in-flight-conflict", "concurrent/in-flight-offsets"}, maybe: []string{"concurrent/same-key-burst", "expiry/edge-burst", "expiry/expired-key-burst", "crash/handler-timeout", "crash/handler-crash"},
		why: "a 5 s lease read as 5 ms: every duplicate sent a tenth of the slow variant or more into the original's run takes the claim over and executes (a burst's requests may all arrive within the 5 ms)"},
	{defect: "expired-reclaim-unlocked", want: []string{"expiry/expired-key-burst"}, maybe: []string{"expiry/edge-burst"},
		why: "the first request after expiry reclaims the key without an in-flight marker: the rest of the burst, arriving while it runs the slow variant, executes too (TestExpiredKeyBurstRidesSlow: with the normal body the burst missed it)"},
	{defect: "lookup-before-body", anyOf: []string{"concurrent/same-key-burst"}, maybe: []string{"expiry/edge-burst", "expiry/expired-key-burst"},
		why: "the lookup runs before the body is read: under last-byte sync every request of a burst looks up before any inserts (TestLookupBeforeBodyCaught; the barrier hits this microsecond window far less often, docs/conformance-engine.md)"},
	{defect: "no-inflight-lock", want: []string{"concurrent/in-flight-conflict", "concurrent/same-key-burst"}, maybe: []string{"concurrent/in-flight-offsets", "expiry/edge-burst", "expiry/expired-key-burst"},
		why: "an in-flight record is treated as absent, so the duplicate executes (concurrent/in-flight-offsets too, unless a stall kept its duplicates out of the original's run: inconclusive; and expiry/expired-key-burst when burst requests arrive while the first new execution runs)"},
	{defect: "block-inflight", strict: true, blockForbidden: true, want: []string{"concurrent/in-flight-conflict"},
		why: "the duplicate waits and replays instead of 409; legal only where blocking is allowed"},
	{defect: "no-user-scope", want: []string{"scope/other-user-in-flight", "scope/other-user-isolated", "security/cross-principal-guess"},
		why: "a second principal reusing the key gets the first one's response, its in-flight 409, or a mismatch error"},
	{defect: "no-endpoint-scope", want: []string{"scope/other-endpoint"},
		why: "the same key on the other operation replays the first operation's response"},
	{defect: "no-expiry", strict: true, want: []string{"expiry/fresh-after-ttl"},
		why: "a retry after TTL + grace still replays instead of executing fresh"},
	{defect: "early-expiry", strict: true, anyOf: []string{"expiry/replays-before-ttl", "concurrent/in-flight-offsets"},
		why: "the record vanishes TTL/10 = 500 ms after its claim: the retry at TTL − margin executes again (expiry/replays-before-ttl, unless a stall made it inconclusive), and so does the duplicate in the middle of the 1.5 s slow original (concurrent/in-flight-offsets); concurrent/conflict-not-poisoned and concurrent/in-flight-conflict may see it too, depending on load"},
	{defect: "cache-5xx", strict: true, noCache5xx: true, want: []string{"errors/failure-releases-key", "errors/transient-5xx"},
		why: "the transient 503 is stored and replayed: the retry does not execute again"},
	{defect: "no-cache-4xx", strict: true, want: []string{"errors/business-error-kept", "replay/business-error"},
		why: "the declined (402) request executes again on retry"},
	{defect: "replay-as-200", strict: true, want: []string{"errors/business-error-kept", "fidelity/created-headers", "replay/business-error", "replay/same-body", "replay/same-status"},
		why: "replays answer 200 instead of the stored 201/402"},
	{defect: "replay-drops-headers", strict: true, want: []string{"fidelity/created-headers", "replay/same-headers"},
		why: "replays lose Content-Type, Location, ETag and Set-Cookie"},
	{defect: "replay-joins-headers", strict: true, want: []string{"fidelity/created-headers", "replay/no-credentials"},
		why: "every header stored as one joined line: the 201's two Set-Cookie lines replay folded into one (replay/same-headers lets a list field's lines be combined, as HTTP does), and replayed at all, which hands the charge's cookie to every retry"},
	{defect: "replay-splits-headers", strict: true, want: []string{"replay/same-headers"},
		why: "Content-Disposition's filename \"charges, ch_….json\" replays split at its comma over two field lines (gofiber/fiber PR #4693)"},
	{defect: "replay-credentials", strict: true, want: []string{"replay/no-credentials"},
		why: "the 201's per-charge Set-Cookie is handed to every replay (granit-fx/granit-dotnet PR #1151); the cookie every answer sets is not counted"},
	{defect: "replay-rebuilds-errors", strict: true, want: []string{"errors/business-error-kept", "replay/business-error"},
		why: "the stored 402 replays rebuilt, a fresh trace_id and no detail: compared like a success"},
	{defect: "conflict-leaks-stored", strict: true, want: []string{"security/conflict-no-leak"},
		why: "the 422 carries the stored response (its id) and the stored body's SHA-256 (AdCP conflict_no_payload_leak)"},
	{defect: "replay-truncates-body", strict: true, want: []string{"fidelity/large-body"},
		why: "the 1 MiB response replays cut at 64 KiB"},
	{defect: "replay-reencodes-body", strict: true, want: []string{"fidelity/binary-body"},
		why: "the binary response replays with its non-UTF-8 bytes turned into U+FFFD"},
	{defect: "failure-wedges-key", want: []string{"crash/handler-crash", "crash/handler-timeout"},
		why: "after the handler panicked or timed out (504) every retry gets 409, past lease + grace (MUST: the reference declares its lease)"},
	{defect: "mismatch-as-409", strict: true, want: []string{"mismatch/added-field", "mismatch/changed-body"},
		why: "409 where the ietf profile prefers 422 (a SHOULD)"},
	{defect: "store-conflicts", strict: true, want: []string{"concurrent/conflict-not-poisoned", "errors/idempotency-errors-not-stored", "mismatch/original-survives"},
		why: "the 422/409 answer becomes the key's outcome: the original no longer replays"},
	{defect: "missing-key-passthrough", want: []string{"missing/rejected", "missing/repeat-fails-again"},
		why: "a keyless request executes instead of 400: the request was not failed, the MUST of both"},
	{defect: "unvalidated-key", strict: true, want: []string{"security/invalid-format-rejected", "syntax/empty-key", "syntax/malformed-sf-string", "syntax/max-length"},
		why: "empty, malformed and over-long keys are accepted"},
	{defect: "lease-never-expires", pending: "managed-target test cmd/idemcheck TestLeaseCrashRecovers (lease/crash-recovers)",
		why: "needs an in-flight request killed with its server, which the in-process matrix cannot do"},
	{defect: "process-local-lock", clean: true,
		why: "an in-process lock is a correct lock as long as there is one process"},
	{defect: "no-query-fingerprint", want: []string{"mismatch/changed-body"},
		why: "the same key and body with another query (the reference contract's authorise-only: ?capture=false) is answered with the first query's response; the other mismatch cases send a body mutation"},
	{defect: "exact-key-spelling", want: []string{"replay/key-field-spelling"},
		why: "a key field spelled other than Idempotency-Key is ignored: the retry sent as IDEMPOTENCY-KEY after idempotency-key executes again"},
	{defect: "replay-coded-body", strict: true, want: []string{"fidelity/content-coding"},
		why: "a gzip body stored and replayed, Content-Encoding and all, to a retry that accepts only identity (idemcheck's other requests name no coding, so only this case sees it)"},
	{defect: "event-outside-tx", pending: "outbox/lease-takeover on PostgreSQL (scenarios TestOutboxDefectsCaught): only a store whose charges roll back with their record shows it, and the matrix runs the memory store",
		why: "an event published before its outcome is stored: a retry after a lost lease publishes a second one while the first execution rolls back"},
	{defect: "event-on-replay", events: true, want: []string{"outbox/lost-answer-retry", "outbox/none-for-replay"}, maybe: []string{"outbox/client-hangup-retry", "outbox/same-key-burst"},
		why: "each replay publishes the key's event again: the retries after a lost answer and the replays of the original (and the burst's requests answered as replays, when some were)"},
	{defect: "cancelled-result-write", pending: "lost/ family (scenarios TestLostFamily: lost/client-hangup)",
		why: "only a client that hangs up while the handler runs cancels the result write; the proxy's hangup fault in lost/client-hangup does"},
	{defect: "expired-row-blocks-claim", want: []string{"expiry/edge-burst"},
		why: "for 500 ms after the TTL the claim fails on the expired record and the re-read misses it: the sweep's bursts in that window all execute (TestExpiryEdgeBurst); expiry/expired-key-burst, a grace after the TTL, misses it"},
	{defect: "event-for-decline", events: true, want: []string{"outbox/none-for-declined"},
		why: "a declined request publishes an event although it changed nothing"},
	{defect: "stale-id-after-expiry", events: true, want: []string{"outbox/fresh-id-after-expiry"},
		why: "the re-execution after expiry announces the first execution's resource id (events.resource_id), not its own"},
	{defect: "relay-republish", pending: "chaos with replica kills (cmd/idemcheck TestChaosEventsKills): the relay republishes only when it restarts",
		why: "a restarted relay republishes sent events without their ids"},
}

// referenceProfile is ietf plus what the reference documents: keys of up
// to reference.MaxKeyLen characters.
func referenceProfile(t testing.TB) *apispec.Profile {
	p := ietf(t)
	p.KeyMaxLen = reference.MaxKeyLen
	return p
}

// matrixBurstRounds is the burst rounds of the matrix's many concurrent
// catalog runs: one round (the slow variant's), as a single burst was
// before rounds existed. Eight default rounds in 8–18 runs at once under
// -race load the 2-core machine until client send times lie by seconds and
// records expire under retries. The check-then-insert rows, which the
// rounds exist for, keep the default: under that load a server may not
// take every request in within last-byte sync's settle time, and a narrow
// window is then hit by chance, as with the barrier.
const matrixBurstRounds = 1

// lightBurst sets matrixBurstRounds unless the defect is a check-then-insert.
func lightBurst(p *apispec.Profile, defect string) *apispec.Profile {
	if defect != "check-then-insert" && defect != "lookup-before-body" && defect != "release-before-store" {
		p.BurstRounds = matrixBurstRounds
	}
	return p
}

func inMatrixFamily(id string) bool {
	return slices.Contains(matrixFamilies, strings.SplitN(id, "/", 2)[0])
}

// caught lists the distinct case IDs that fail the run (fail, or warn
// under strict), split into this table's families and the others.
func caught(rep *scenarios.Report) (own, other []string) {
	set := map[string]bool{}
	for _, r := range rep.Results {
		if r.Status == scenarios.Fail || (rep.Strict && r.Status == scenarios.Warn) {
			set[r.ID] = true
		}
	}
	for id := range set {
		if inMatrixFamily(id) {
			own = append(own, id)
		} else {
			other = append(other, id)
		}
	}
	sort.Strings(own)
	sort.Strings(other)
	return own, other
}

// matrixReruns bounds the fresh runs of a catching case that ended
// inconclusive (its attempts all missed their timing on a loaded machine).
const matrixReruns = 2

// rerunInconclusive runs again, each time on a fresh server with defect
// (start's), the cases of ids that ended inconclusive in rep (all of them
// when ids is nil), and puts their new results in its place: inconclusive is honest under a stall, but the
// table asks whether the catalog catches the defect, which a stall does
// not answer. A pass is never rerun: it stands as the false pass it is.
func rerunInconclusive(t *testing.T, defect string, start func(testing.TB, ...string) *apispec.Target, p *apispec.Profile, rep *scenarios.Report, ids []string) {
	t.Helper()
	for try := 1; try <= matrixReruns; try++ {
		var again []string
		for _, r := range rep.Results {
			if r.Status == scenarios.Inconclusive && (ids == nil || slices.Contains(ids, r.ID)) {
				again = append(again, r.Name())
			}
		}
		if len(again) == 0 {
			return
		}
		t.Logf("%s: %v inconclusive, run again on a fresh server (%d of %d)", defect, again, try, matrixReruns)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		more, err := scenarios.Run(ctx, defectDemo(t, defect), p, scenarios.RunOptions{Run: again, Strict: rep.Strict})
		cancel()
		if err != nil {
			t.Fatalf("%s: rerun of %v: %v", defect, again, err)
		}
		for _, m := range more.Results {
			for j, r := range rep.Results {
				if r.Name() == m.Name() {
					rep.Results[j] = m
				}
			}
		}
	}
}

// defectDemo is the reference with defect, publishing its events when
// the defect's row asks for them (events).
func defectDemo(t testing.TB, defect string) *apispec.Target {
	t.Helper()
	for _, row := range defectMatrix {
		if row.defect == defect && row.events {
			return eventsDemo(t, nil, demoLease, defect)
		}
	}
	return startDemo(t, defect)
}

// TestReferencePassesEveryCase: the correct reference passes the whole
// catalog, plain under ietf, and publishing its events through its outbox
// (the outbox/ cases run) under the reference's profile.
func TestReferencePassesEveryCase(t *testing.T) {
	profiles := []*apispec.Profile{lightBurst(ietf(t), ""), lightBurst(referenceProfile(t), "")}
	targets := []*apispec.Target{startDemo(t), eventsDemo(t, nil, demoLease)}
	reps := make([]*scenarios.Report, len(profiles))
	errs := make([]error, len(profiles))
	concurrently(len(profiles), len(profiles), func(i int) {
		reps[i], errs[i] = runCatalog(targets[i], profiles[i], true)
	})
	for i, p := range profiles {
		if errs[i] != nil {
			t.Fatalf("key_max_len=%d: Run: %v", p.KeyMaxLen, errs[i])
		}
		rep := reps[i]
		for _, r := range rep.Results {
			if r.Status == scenarios.Fail || r.Status == scenarios.Warn || r.Status == scenarios.Inconclusive {
				t.Errorf("key_max_len=%d %s: %s: expected %q, observed %q %s", p.KeyMaxLen, r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
			}
		}
		if ok, problems := rep.Outcome(); !ok {
			t.Errorf("correct reference fails the run: %v", problems)
		}
		outbox := 0
		for _, r := range rep.Results {
			if r.Family == "outbox" && r.Status == scenarios.Pass {
				outbox++
			}
		}
		if publishes := targets[i].Events != nil; publishes != (outbox > 0) {
			t.Errorf("key_max_len=%d: %d outbox/ cases passed with events: %v: they run exactly when events: is configured", p.KeyMaxLen, outbox, publishes)
		}
		t.Logf("key_max_len=%d: %d results in %s, counts %v", p.KeyMaxLen, len(rep.Results), rep.Duration.Round(time.Millisecond), rep.Counts())
	}
}

// matrixParallel bounds how many catalog runs the matrix tests run at
// once (each run is itself concurrent; most of its time is waiting).
const matrixParallel = 8

func TestDefectMatrix(t *testing.T) {
	rows := map[string]bool{}
	for _, row := range defectMatrix {
		rows[row.defect] = true
	}
	for _, d := range demo.DefectNames() {
		// A gRPC-only defect's row is in TestGRPCDefects.
		if !rows[d] && !reference.Defect(d).GRPCOnly() && !reference.Defect(d).UpdateOnly() { // UpdateOnly: TestUpdateDefects
			t.Errorf("defect %q has no row in defectMatrix", d)
		}
	}
	// Servers start here (startDemo may t.Fatal); the runs go concurrently;
	// each row is then judged in its own subtest.
	targets := make([]*apispec.Target, len(defectMatrix))
	profiles := make([]*apispec.Profile, len(defectMatrix))
	for i, row := range defectMatrix {
		if row.pending != "" {
			continue
		}
		targets[i] = defectDemo(t, row.defect)
		profiles[i] = lightBurst(referenceProfile(t), row.defect)
		if row.blockForbidden {
			profiles[i].BlockOK = false
		}
		if row.noCache5xx {
			profiles[i].Cache5xx = apispec.No
		}
	}
	reps := make([]*scenarios.Report, len(defectMatrix))
	errs := make([]error, len(defectMatrix))
	concurrently(len(defectMatrix), matrixParallel, func(i int) {
		if targets[i] != nil {
			reps[i], errs[i] = runCatalog(targets[i], profiles[i], defectMatrix[i].strict)
		}
	})
	for i, row := range defectMatrix {
		if errs[i] == nil && reps[i] != nil && !row.clean {
			rerunInconclusive(t, row.defect, startDemo, profiles[i], reps[i], append(slices.Clone(row.want), row.anyOf...))
		}
	}
	for i, row := range defectMatrix {
		t.Run(row.defect, func(t *testing.T) {
			if row.pending != "" {
				t.Skipf("caught by the %s: %s", row.pending, row.why)
			}
			if errs[i] != nil {
				t.Fatalf("Run: %v", errs[i])
			}
			rep := reps[i]
			if row.clean {
				if ok, problems := rep.Outcome(); !ok {
					t.Fatalf("one replica with defect %s fails the run: %v (%s)", row.defect, problems, row.why)
				}
				return
			}
			if ok, _ := rep.Outcome(); ok {
				t.Fatalf("the run passes against defect %s (%s)", row.defect, row.why)
			}
			own, other := caught(rep)
			own = slices.DeleteFunc(own, func(id string) bool { return slices.Contains(row.maybe, id) })
			if row.anyOf != nil {
				if !slices.ContainsFunc(row.anyOf, func(id string) bool { return slices.Contains(own, id) }) {
					t.Errorf("caught by %v, want at least one of %v (%s)", own, row.anyOf, row.why)
				}
			} else if !slices.Equal(own, row.want) {
				t.Errorf("caught by %v, want %v (%s)", own, row.want, row.why)
				for _, r := range rep.Results {
					if slices.Contains(own, r.ID) || slices.Contains(row.want, r.ID) {
						t.Logf("%s: %s expected %q observed %q %s", r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
					}
				}
			}
			if len(other) > 0 {
				t.Logf("also caught by %v", other)
			}
		})
	}
}

// TestOtherLegalChoices: servers that make other choices the profiles
// allow must not fail. Each row is a reference configuration plus the
// profile that documents its choice.
func TestOtherLegalChoices(t *testing.T) {
	rows := []struct {
		name    string
		opts    demo.Options
		profile func(*apispec.Profile)
		// pass are the cases the choice concerns: each must pass, not skip.
		pass []string
	}{
		{"blocks in-flight duplicates (block_ok)", demo.Options{Defects: []string{"block-inflight"}}, func(*apispec.Profile) {}, nil},
		{"409 for mismatches (seeds statuses)", demo.Options{Defects: []string{"mismatch-as-409"}}, func(p *apispec.Profile) { p.MismatchStatus = []int{409, 422} }, nil},
		{"key optional", demo.Options{KeyOptional: true}, func(p *apispec.Profile) { p.KeyRequired = apispec.No }, nil},
		{"lenient profile", demo.Options{}, func(p *apispec.Profile) { *p = *mustProfile(t, "lenient") }, nil},
		{"seeds profile", demo.Options{}, func(p *apispec.Profile) { *p = *mustProfile(t, "seeds") }, nil},
		{"no fingerprint at all (Worldline, Qonto: stale_replay_on_mismatch)", demo.Options{Defects: []string{"no-fingerprint"}},
			func(p *apispec.Profile) { p.StaleReplayOnMismatch = apispec.Yes }, []string{"mismatch/changed-body"}},
		{"409 until expiry after a crashed attempt (Whop: failed_key)", demo.Options{FailedKeyLocked: true},
			func(p *apispec.Profile) { p.FailedKey = apispec.FailedKeyLocked }, []string{"crash/handler-crash", "crash/handler-timeout"}},
		{"a large answer kept as a 413 tombstone (large_replay)", demo.Options{TombstoneOver: 64 << 10},
			func(p *apispec.Profile) { p.LargeReplay = apispec.LargeTombstone }, []string{"fidelity/large-body"}},
	}
	targets := make([]*apispec.Target, len(rows))
	profiles := make([]*apispec.Profile, len(rows))
	for i, row := range rows {
		o := row.opts
		o.TTL, o.Lease = demoTTL, demoLease
		app, err := demo.New(o)
		if err != nil {
			t.Fatalf("%s: %v", row.name, err)
		}
		srv := httptest.NewServer(app)
		t.Cleanup(func() { srv.Close(); app.Close() })
		if targets[i], err = apispec.FromURL(srv.URL, demoTTL, demoLease); err != nil {
			t.Fatal(err)
		}
		profiles[i] = referenceProfile(t)
		row.profile(profiles[i])
		lightBurst(profiles[i], "")
	}
	reps := make([]*scenarios.Report, len(rows))
	errs := make([]error, len(rows))
	concurrently(len(rows), matrixParallel, func(i int) {
		reps[i], errs[i] = runCatalog(targets[i], profiles[i], true)
	})
	for i, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatalf("Run: %v", errs[i])
			}
			var judged []scenarios.Result
			for _, r := range reps[i].Results {
				if inMatrixFamily(r.ID) {
					judged = append(judged, r)
				}
			}
			neverFalse(t, "", judged)
			for _, id := range row.pass {
				for _, r := range reps[i].Results {
					if r.ID == id && r.Status != scenarios.Pass && r.Status != scenarios.Inconclusive {
						t.Errorf("%s: %s (%s), want pass: the profile names this choice", r.Name(), r.Status, r.Reason)
					}
				}
			}
		})
	}
}

func mustProfile(t testing.TB, name string) *apispec.Profile {
	p, err := apispec.ProfileByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReferencePreset: the "reference" preset declares the reference's
// published policy, so under it (and --strict) the correct reference gives
// no fail, warn or inconclusive, and every defect the in-process matrix can
// run fails the run — the one-flag way to gate on the reference's contract
// (`idemcheck run --target URL --profile reference --strict`). A defect's
// run holds the cases TestDefectMatrix names as its catchers (a whole run
// holds them too, and another case can only add a failure): the full
// catalog runs once, on the correct build.
func TestReferencePreset(t *testing.T) {
	var defects []string
	catchers := [][]string{nil} // the correct build: every case
	for _, row := range defectMatrix {
		if row.pending == "" && !row.clean { // a clean row is caught only across replicas
			defects = append(defects, row.defect)
			catchers = append(catchers, slices.Concat(row.want, row.anyOf, row.maybe))
		}
	}
	names := append([]string{""}, defects...) // "" is the correct build
	targets := make([]*apispec.Target, len(names))
	for i, d := range names {
		if d == "" {
			targets[i] = startDemo(t)
		} else {
			targets[i] = defectDemo(t, d)
		}
	}
	preset := mustProfile(t, "reference")
	reps := make([]*scenarios.Report, len(names))
	errs := make([]error, len(names))
	concurrently(len(names), matrixParallel, func(i int) {
		p := *preset
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		reps[i], errs[i] = scenarios.Run(ctx, targets[i], lightBurst(&p, names[i]), scenarios.RunOptions{Strict: true, Run: catchers[i]})
	})
	for i, d := range names {
		if errs[i] != nil {
			t.Fatalf("%q: Run: %v", d, errs[i])
		}
		ok, problems := reps[i].Outcome()
		if d == "" {
			// A stall may leave a MUST inconclusive (exit 5): bounded by
			// neverFalse; a failure is not.
			if !neverFalse(t, "correct reference ", reps[i].Results) && !ok {
				t.Errorf("correct reference fails under the reference preset: %v", problems)
			}
			continue
		}
		if ok {
			t.Errorf("defect %s passes a strict run under the reference preset", d)
		}
	}
}

// matrixMaxInconclusive bounds the share of a correct server's instances a
// loaded machine may leave inconclusive (a missed overlap, a stall past a
// clock) before the check says overlaps are no longer being created.
const matrixMaxInconclusive = 0.10

// neverFalse checks a correct server's results: never a fail or a warn (a
// false verdict); inconclusive only where a stall kept the case from
// deciding, logged and bounded by matrixMaxInconclusive. It reports whether
// any was inconclusive.
func neverFalse(t *testing.T, who string, rs []scenarios.Result) (inconclusive bool) {
	t.Helper()
	n := 0
	for _, r := range rs {
		switch r.Status {
		case scenarios.Fail, scenarios.Warn:
			t.Errorf("%s%s: %s: expected %q, observed %q %s", who, r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
		case scenarios.Inconclusive:
			n++
			t.Logf("%s%s: inconclusive (a loaded machine): %s", who, r.Name(), r.Reason)
		}
	}
	if float64(n) > matrixMaxInconclusive*float64(len(rs)) {
		t.Errorf("%s%d of %d instances inconclusive (more than %.0f%%): overlaps are not being created", who, n, len(rs), 100*matrixMaxInconclusive)
	}
	return n > 0
}
