package mount

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

func newBlockConfig(opts []BlockOption) blockConfig {
	c := blockConfig{run: runTool}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// runTool is the default Runner. Standard input is the null device: mke2fs
// asks before overwriting a filesystem only on a terminal, and a question
// nobody answers would hang the stage.
func runTool(name string, args ...string) (ToolOutput, error) {
	path, err := FindTool(name)
	if err != nil {
		return ToolOutput{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() >= 0 {
		err = nil
	}
	if err != nil {
		return ToolOutput{}, fmt.Errorf("mount: run %s: %w", name, err)
	}
	return ToolOutput{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Exit: cmd.ProcessState.ExitCode()}, nil
}

// checkNotHeld fails with ErrDeviceBusy if another program has the block
// device at path open exclusively, as e2fsck and mkfs.ext4 open it, or
// has it mounted: Linux refuses an exclusive open (O_EXCL) of a block
// device then, with EBUSY. Its own exclusive open is closed at once,
// before any tool runs: e2fsck and mkfs.ext4 would refuse a device the
// stage still held. A program that takes the device in between is seen by
// the tool, whose refusal the verdicts read as ErrDeviceBusy as well.
func checkNotHeld(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_EXCL|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.EBUSY) {
		return deviceBusy(path, "an exclusive open of it failed: "+unix.EBUSY.Error())
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return fmt.Errorf("mount: stage: %w", err)
	}
	return nil
}
