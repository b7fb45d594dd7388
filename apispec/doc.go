// Package apispec is the model of what idemcheck tests: the config file's
// types and their one reader (ReadFile and File.Load; LoadConfig,
// LoadConfigPreset and ParseConfig wrap them), the carrier a base URL
// names (IsGRPC: only wire and this package ask it by name),
// validation with one-line errors naming the field, profiles and their
// presets, principals and secrets (${NAME} references, redaction), keys and
// their syntax and format, operations with their variants and mutations,
// the oracles' and the downstream double's configuration, replicas, and
// the run selection. It is a leaf: it holds no driver, broker client or
// process control. The SQL oracle's DSN is read here (kind, password) and
// opened by evidence with its driver; a target_cmd is split here and
// started by internal/managed.
//
// Every face reads a config through it: run, chaos, load, the go-test face,
// init (to validate what it writes) and verify. It answers what a config
// says; it sends nothing.
//
// It may import internal/ packages (but internal/managed, which builds on
// it), evidence/double (for the double's config types, which the config
// file embeds) and evidence/eventspec (the events: section's Config,
// apart from its reader evidence/events, which holds the broker clients).
// It must not import wire, evidence, scenarios or any front end: those
// build on it. internal/archtest holds all of this, and that no package it
// reaches is a database driver or broker client.
package apispec
