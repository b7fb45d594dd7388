// Package managed is process control for the servers the harness starts
// itself (target_cmd, --target-cmd): Start runs one on a free loopback
// port and waits until it answers, StartReplicas runs several; a Process
// is killed, restarted and stopped by the crash cases and by chaos.
//
// It lives apart from the config model (apispec), which only says what to
// start, so that the model stays a leaf; it imports apispec and
// internal/freeport only.
package managed
