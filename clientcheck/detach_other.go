//go:build !unix

package clientcheck

import "os/exec"

// detach: no process groups here; ending the run kills the process.
func detach(*exec.Cmd) {}

// killGroup: no process group to kill; what the command started is its own.
func killGroup(*exec.Cmd) error { return nil }
