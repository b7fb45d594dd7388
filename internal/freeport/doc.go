// Package freeport finds a free TCP port on loopback: for a managed target
// the harness starts and for the servers tests start.
//
// It imports nothing of idemcheck's and must stay so: target and
// internal/testenv, at the bottom of the house, import it.
package freeport
