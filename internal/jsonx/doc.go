// Package jsonx holds the two JSON operations every face of idemcheck
// needs on bodies and configs: RFC 6901 pointers and RFC 7386 merge
// patches. It is internal: users name pointers and patches in YAML, they
// never call this code.
//
// It imports nothing of idemcheck's and must stay so: apispec, wire,
// evidence, the engine, chaos and load all import it.
package jsonx
