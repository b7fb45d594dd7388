//go:build !unix

package clientcheck

import "os/exec"

// detach: no process groups here; ending the run kills the process.
func detach(*exec.Cmd) {}
