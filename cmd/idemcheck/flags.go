package main

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// The flags several commands share are defined here, once each: a name
// means one thing with one help text on every command that has it. A
// command adds a short note where its use differs (what it reads from the
// config, what a TTL changes for it); names and defaults are its own.

// addConfigFlag defines --config; note, when given, says what this
// command reads from the config.
func addConfigFlag(fl *pflag.FlagSet, dst *string, note string) {
	fl.StringVar(dst, "config", "", withNote("YAML config describing the API under test", note))
}

// targetUsage documents --target: the reference contract's base URL.
const targetUsage = "base URL of a server following the reference contract (idemcheck serve)"

// addTargetFlag defines --target, one base URL.
func addTargetFlag(fl *pflag.FlagSet, dst *string) {
	fl.StringVar(dst, "target", "", targetUsage)
}

// addTargetCmdFlag defines --target-cmd; note says what this command
// does with the process.
func addTargetCmdFlag(fl *pflag.FlagSet, dst *string, note string) {
	fl.StringVar(dst, "target-cmd", "", withNote("command line starting the target; {port} becomes a free loopback port; "+
		"alone it implies the reference contract at http://127.0.0.1:{port}", note))
}

// addReplicaFlag defines --replica.
func addReplicaFlag(fl *pflag.FlagSet, dst *[]string) {
	fl.StringArrayVar(dst, "replica", nil, "base URL of another replica of the same API (one store behind them), beside --target or "+
		"the config's base_url (a gRPC target's: grpc://host:port, the base URL's scheme); repeatable; replaces the config's replicas. "+
		"The replicas/ cases spread keys over them; load balances over them, and chaos over an HTTP target's")
}

// addProfileFlag defines --profile; note says what of the profile this
// command judges by.
func addProfileFlag(fl *pflag.FlagSet, dst *string, note string) {
	fl.StringVar(dst, "profile", "", withNote("profile preset: "+strings.Join(apispec.ProfileNames(), ", ")+
		" (replaces the config's profile)", note))
}

// addTTLFlag defines --ttl, the target's key lifetime as the checker
// knows it (serve's --ttl is the server's own setting); over names what
// it overrides ("" for nothing) and effect what it changes.
func addTTLFlag(fl *pflag.FlagSet, dst *time.Duration, over, effect string) {
	usage := "the target's key lifetime (TTL)"
	if over != "" {
		usage += ", overriding " + over
	}
	fl.DurationVar(dst, "ttl", 0, usage+": "+effect)
}

// addLeaseFlag defines --lease, the target's in-flight lease as the
// checker knows it (serve's --lease is the server's own).
func addLeaseFlag(fl *pflag.FlagSet, dst *time.Duration) {
	fl.DurationVar(dst, "lease", 0, "the target's in-flight lease, overriding the config")
}

// addSelectFlags defines --run and --skip, the globs that select cases.
func addSelectFlags(fl *pflag.FlagSet, run, skip *[]string) {
	fl.StringArrayVar(run, "run", nil, "only cases matching this glob (family/case@operation; * within a segment, "+
		"a ** segment across, {a,b} alternatives); repeatable")
	fl.StringArrayVar(skip, "skip", nil, "leave out cases matching this glob; repeatable")
}

// addMarginFlag defines --margin with the default def; note says where
// the margin comes from otherwise.
func addMarginFlag(fl *pflag.FlagSet, dst *time.Duration, def time.Duration, note string) {
	fl.DurationVar(dst, "margin", def, withNote("the profile's margin before the TTL: what is sent later than TTL − margin "+
		"after its key's first request is not judged against it", note))
}

// addAllowIncompleteFlag defines --allow-incomplete: what names the lack
// of evidence that is otherwise exit 5.
func addAllowIncompleteFlag(fl *pflag.FlagSet, dst *bool, what string) {
	fl.BoolVar(dst, "allow-incomplete", false, "exit 0, not 5, although "+what)
}

// The lacks of evidence --allow-incomplete accepts, by checker.
const (
	incompleteChaos = "no operation shows an execution, or more keys were not judged than judged"
	incompleteLoad  = "most answers were not judged (keys that may have expired, no warm-up response)"
)

// addJSONFlag defines --json; note, when given, says more of the file.
func addJSONFlag(fl *pflag.FlagSet, dst *string, note string) {
	fl.StringVar(dst, "json", "", withNote("write the JSON report to `FILE`", note))
}

// addHTMLFlag defines --html; contents says what the page shows.
func addHTMLFlag(fl *pflag.FlagSet, dst *string, contents string) {
	fl.StringVar(dst, "html", "", "write the HTML report ("+contents+"; one self-contained file) to `FILE`")
}

// htmlChaos is what the page of chaos and analyze shows.
const htmlChaos = "timeline of attempts, faults and findings; per-key drill-down"

// addVerboseFlag defines --verbose (-v); more says what else it shows.
func addVerboseFlag(fl *pflag.FlagSet, dst *bool, more string) {
	fl.BoolVarP(dst, "verbose", "v", false, withNote("show progress even when stdout is not a terminal", more))
}

// addTimeoutFlag defines --timeout, the bound on each request; note says
// which requests.
func addTimeoutFlag(fl *pflag.FlagSet, dst *time.Duration, note string) {
	fl.DurationVar(dst, "timeout", 10*time.Second, withNote("bound on each request", note))
}

// keyHeaderUsage documents --key-header.
const keyHeaderUsage = "the idempotency key header's name"

// addFaultFlag defines --fault.
func addFaultFlag(fl *pflag.FlagSet, dst *[]string) {
	fl.StringArrayVar(dst, "fault", nil, "fault spec KIND[:P | :key=value,...] (kinds: idemcheck proxy --help); repeatable, tried in order, first selected wins")
}

// addHistoryFlag defines --history, the JSONL file of every attempt.
func addHistoryFlag(fl *pflag.FlagSet, dst *string) {
	fl.StringVar(dst, "history", "", "write the JSONL history of every attempt to `FILE` (truncated first; idemcheck analyze re-checks it)")
}

// tlsFlags registers the flags that reach an https target (run, list,
// load, chaos, proxy, init).
func tlsFlags(fl *pflag.FlagSet, o *apispec.TLS) {
	fl.StringVar(&o.CACert, "ca-cert", "", "PEM file of the CA(s) that sign the target's certificate (default: the system roots)")
	fl.BoolVar(&o.InsecureSkipVerify, "insecure-skip-verify", false, "do not verify the target's TLS certificate (test deployments only)")
	fl.StringVar(&o.ClientCert, "client-cert", "", "PEM client certificate for mutual TLS (with --client-key)")
	fl.StringVar(&o.ClientKey, "client-key", "", "PEM private key of --client-cert")
}

// reachFlags registers --base-url, the TLS flags, --http2 and the key
// flags a scenarios.Selection understands.
func reachFlags(fl *pflag.FlagSet, sel *scenarios.Selection) {
	fl.StringVar(&sel.BaseURL, "base-url", "", "replace the config's base_url (one config, many environments), any http(s) URL")
	tlsFlags(fl, &sel.TLS)
	fl.BoolVar(&sel.HTTP2, "http2", false, "speak HTTP/2 only: h2 by ALPN over https, h2c with prior knowledge over http (the config's http2: true)")
	fl.BoolVar(&sel.HashKeys, "hash-keys", false, "client-generated keys are business-id hashes: SHA-256(seed:n) (a config's key_source still wins)")
	fl.StringVar(&sel.KeySeed, "key-seed", "", "seed for --hash-keys (default: random, printed in the report)")
}

// withNote appends a command's note to a shared help text.
func withNote(usage, note string) string {
	if note == "" {
		return usage
	}
	return usage + "; " + note
}
