// Package apispec is the model of what idemcheck tests: the config file's
// types and their one reader (ReadFile and File.Load; LoadConfig,
// LoadConfigPreset and ParseConfig wrap them), the carrier a base URL
// names (IsGRPC: only wire and this package ask it by name),
// validation with one-line errors naming the field, profiles and their
// presets, principals and secrets (${NAME} references, redaction), keys and
// their syntax and format, operations with their variants and mutations,
// the oracles' and the downstream double's configuration, replicas, and
// the servers the harness starts itself (StartManaged, StartReplicas).
//
// Every face reads a config through it: run, chaos, load, the go-test face,
// init (to validate what it writes) and verify. It answers what a config
// says; it sends nothing but a managed server's readiness probe.
//
// It may import internal/ packages, evidence/double (for the double's
// config types, which the config file embeds) and evidence/events (for
// the events: section's Config, whose Validate is the one check of it:
// the type lives with its reader, which stays a leaf, rather than here,
// so that the reader never imports the config model). It must not import wire,
// evidence, scenarios or any front end: those build on it.
package apispec
