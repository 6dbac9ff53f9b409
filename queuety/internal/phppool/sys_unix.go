//go:build unix

package phppool

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the worker in its own process group, so a kill
// reaches whatever it started too, and a terminal's Ctrl-C reaches only
// the daemon, which then shuts the pool down in order.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcess(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}

// killGroup kills what is left of a reaped worker's process group.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
