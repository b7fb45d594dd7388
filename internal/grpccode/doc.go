// Package grpccode names the gRPC status codes and maps each to the HTTP
// status google.rpc.Code (google/rpc/code.proto) gives it: the one table
// the config model (target) and the fault proxy (chaos, a leaf that may
// import only internal/*) read gRPC answers by.
//
// It imports nothing of idemcheck's (internal/archtest checks this).
package grpccode
