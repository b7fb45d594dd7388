// Command knobless serves the knob-less orders API (internal/knobless) for
// scripts/bench-double.sh.
//
// Of idemcheck's packages it imports only internal/knobless.
package main
