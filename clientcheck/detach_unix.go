//go:build unix

package clientcheck

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// detach puts the command in its own process group, and makes ending the
// run kill the whole group: a shell harness's curl dies with its shell.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
}

// killGroup kills the command's process group: whatever it started and
// left running, once it exited, or all of it when the run ends early.
func killGroup(cmd *exec.Cmd) error {
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
