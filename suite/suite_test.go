package suite_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Flags after -args (go test) or -- (ginkgo). With neither -config nor
// -target the suite starts the reference demo app in-process, so a bare
// `go test ./suite` is self-contained.
var (
	configFlag  = flag.String("config", "", "YAML config describing the API under test")
	targetFlag  = flag.String("target", "", "base URL of a server following the reference contract (idemcheck serve)")
	profileFlag = flag.String("profile", "", "profile preset (ietf, stripe, seeds, lenient, reference); replaces the config's profile")
	strictFlag  = flag.Bool("strict", false, "an unmet SHOULD fails instead of warning")
	allowFlag   = flag.Bool("allow-incomplete", false, "a MUST-level case without evidence (unverifiable, inconclusive) skips instead of failing")
	jsonFlag    = flag.String("report-json", "", "also write the idemcheck JSON report (idemcheck.report/v1) to this file")
	cmdFlag     = flag.String("target-cmd", "", "command that starts the target on {port} (the LEASE crash case kills and restarts it)")
	ttlFlag     = flag.Duration("ttl", 0, "the target's retention (TTL), overriding the config; enables the expiry cases")
	leaseFlag   = flag.Duration("lease", 0, "the target's in-flight lease, overriding the config")
)

// demoTTL is the reference demo's retention in self-contained runs: short
// so the expiry cases finish quickly, and 1.5 s longer than the slow
// variant so a loaded machine does not expire records the cases replay.
const demoTTL = 3 * time.Second

var (
	tg       *apispec.Target
	profile  *apispec.Profile
	useDemo  bool
	planned  []scenarios.Planned
	report   *scenarios.Report
	byName   map[string]scenarios.Result
	setupErr error
)

func TestConformance(t *testing.T) {
	sel := scenarios.Selection{Config: *configFlag, Target: *targetFlag, TargetCmd: *cmdFlag,
		Profile: *profileFlag, TTL: *ttlFlag, Lease: *leaseFlag}
	var err error
	tg, profile, err = sel.Load()
	if err == scenarios.ErrNoTarget {
		useDemo = true
		// The demo's URL is known only once it listens; the plan needs
		// the operations, which the reference contract fixes.
		tg, err = apispec.FromURL("http://127.0.0.1:1", demoTTL, 0)
		if err == nil {
			profile, err = apispec.ProfileByName(*profileFlag)
		}
	}
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	if planned, err = scenarios.Plan(tg, profile, scenarios.RunOptions{Strict: *strictFlag}); err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "idemcheck conformance")
	if useDemo {
		// The in-process demo and the engine's connections are gone; Ginkgo
		// keeps its interrupt watcher alive by design.
		goleak.VerifyNone(t, goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
	}
}

// The engine runs once, on process 1, with every case concurrent inside
// it; every process then reads the results its specs assert.
var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	t := *tg
	if useDemo {
		app, err := demo.New(demo.Options{TTL: demoTTL})
		Expect(err).NotTo(HaveOccurred())
		srv := httptest.NewServer(app)
		DeferCleanup(func() { srv.Close(); _ = app.Close() })
		demoTarget, err := apispec.FromURL(srv.URL, demoTTL, 0)
		Expect(err).NotTo(HaveOccurred())
		t = *demoTarget
	}
	rep, err := scenarios.Run(ctx, &t, profile, scenarios.RunOptions{Strict: *strictFlag})
	Expect(err).NotTo(HaveOccurred(), "idemcheck run")
	b, err := json.Marshal(rep)
	Expect(err).NotTo(HaveOccurred())
	return b
}, func(b []byte) {
	report = &scenarios.Report{}
	Expect(json.Unmarshal(b, report)).To(Succeed())
	report.AllowIncomplete = *allowFlag
	byName = map[string]scenarios.Result{}
	for _, r := range report.Results {
		byName[r.Name()] = r
	}
}, NodeTimeout(15*time.Minute))

// One Describe per family, one It per case instance, labelled with the
// level, the family and what the case needs.
var _ = Describe("idemcheck", func() {
	families := map[string][]scenarios.Planned{}
	var order []string
	for _, p := range planned {
		if _, ok := families[p.Family]; !ok {
			order = append(order, p.Family)
		}
		families[p.Family] = append(families[p.Family], p)
	}
	for _, fam := range order {
		Describe(fam, Label("family:"+fam), func() {
			for _, p := range families[fam] {
				labels := Labels{string(p.Level)}
				for _, n := range p.Needs {
					labels = append(labels, "needs:"+string(n))
				}
				It(p.Name(), labels, func() {
					r, ok := byName[p.Name()]
					Expect(ok).To(BeTrue(), "the engine returned no result for %s", p.Name())
					// The run-outcome rule, as idemchecktest reads it: a
					// MUST without evidence fails unless -allow-incomplete.
					switch d := idemchecktest.Decide(report, r); {
					case d.Fail:
						Fail(d.Text)
					case d.Skip:
						Skip(d.Text)
					case d.Text != "":
						AddReportEntry("warning: SHOULD unmet", d.Text)
					}
				})
			}
		})
	}
})

// The idemcheck summary line, and the JSON report when asked. Under
// --dry-run nothing ran, so there is nothing to summarise.
var _ = ReportAfterSuite("idemcheck summary", func(r Report) {
	if r.SuiteConfig.DryRun || report == nil {
		return
	}
	c := reports.Tally(report)
	fmt.Fprintf(os.Stdout, "\nidemcheck: %d passed, %d failed, %d warned, %d skipped\n", c.Passed, c.Failed, c.Warned, c.Skipped)
	if *jsonFlag != "" {
		f, err := os.Create(*jsonFlag)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		Expect(reports.JSON(f, report)).To(Succeed())
	}
})
