// Package clock holds the one wait every package of idemcheck shares.
//
// It imports nothing of idemcheck's and must stay so: it sits under the
// engine and the evidence, which import it.
package clock
