// Package progress shows how a long run is going: a status line redrawn in
// place on a terminal, or (when asked with -v) a plain line every few
// seconds elsewhere. It is off when stdout is not a terminal, so CI logs
// stay clean.
//
// It imports nothing of idemcheck's; the CLI imports it.
package progress
