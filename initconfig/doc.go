// Package initconfig writes an idemcheck config from what an API team
// already has (idemcheck init): an OpenAPI 3.0 or 3.1 document
// (FromOpenAPI, read with kin-openapi), a live endpoint (Probe, through
// the engine's Env and the request layer every face uses) or a gRPC
// service's descriptors (FromGRPC: server reflection or a protoset, read
// by wire's gRPC carrier). The file is
// built as YAML nodes so that each value carries a comment saying where it
// came from, "guessed:" for a guess and "TODO:" for a gap; what a document
// cannot say (the evidence source, the slow and error variants) is written
// as commented config.
//
// It is a front end: it imports scenarios (NewEnv and Req, to probe),
// target (to validate what it writes with the one loader), wire and
// internal/jsonx; it must not import cmd or another front end (suite,
// idemchecktest, load, chaos/drive, reports). Nothing imports it but the
// CLI.
package initconfig
