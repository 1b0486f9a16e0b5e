package mount

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// FindTool looks a program (blkid, e2fsck, mkfs.ext4) up on PATH, then in
// the system directories a service's PATH sometimes lacks.
func FindTool(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if fi, serr := os.Stat(p); serr == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("mount: %s not found (install util-linux and e2fsprogs): %w", name, err)
}
