// Package front starts the fault proxy in front of a target for every
// carrier (Start): chaos's HTTP proxy before an HTTP target, its gRPC
// proxy before a carrier of protobuf messages (wire.Messages), and the
// carrier of the calls through it. The engine's lost-answer cases and
// chaos's driver both start theirs here, so a fault is injected one way
// whatever the carrier.
//
// It sits above chaos (a leaf) and wire: it may import apispec, wire,
// chaos and internal/*, never the engine or a front end.
package front
