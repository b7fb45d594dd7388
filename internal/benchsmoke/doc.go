// Package benchsmoke keeps `make bench` from rotting unnoticed: its test,
// part of `make test`, runs scripts/bench.sh with every benchmark script
// (scripts/bench-*.sh) cut to one short round and checks that each ran
// and recorded its ratios. It asserts no timing: the figures of a smoke
// round on a CI machine mean nothing, only that they were produced.
//
// It imports nothing of idemcheck's: the scripts build what they measure.
package benchsmoke
