//go:build unix

package clientcheck

import (
	"os/exec"
	"syscall"
)

// detach puts the command in its own process group, and makes ending the
// run kill the whole group: a shell harness's curl dies with its shell.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
