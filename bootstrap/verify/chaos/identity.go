package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Identities names every mount on disk under a node agent's data directory
// by an identity that a new mount at the same path would not have: for a
// bind mount its unique mount ID (statx STATX_MNT_ID_UNIQUE, Linux 6.8;
// on older kernels its ID in /proc/self/mountinfo, which the kernel reuses
// once freed, so a redo may go unseen there), for a symlink its device,
// inode and modification time (inode numbers are reused too). Equal
// identities before and after an agent restart prove that the mounts were
// read back, not redone. Targets that are not Mounted are left out.
func Identities(dataDir string, m mount.Mounter) (map[string]string, error) {
	l, err := layout.New(dataDir)
	if err != nil {
		return nil, err
	}
	found, err := mount.Scan(l, m)
	if err != nil {
		return nil, err
	}
	ids, err := mount.MountIDs()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range found.Entries {
		if e.State != mount.Mounted {
			continue
		}
		id, err := identity(e.Path, ids)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dataDir, e.Path)
		out[rel] = id
	}
	return out, nil
}

func identity(path string, ids map[string]int) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if fi.Mode().Type() == os.ModeSymlink {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return "", fmt.Errorf("chaos: no inode for %s", path)
		}
		return fmt.Sprintf("symlink dev=%d ino=%d mtime=%d", st.Dev, st.Ino, fi.ModTime().UnixNano()), nil
	}
	if id, ok := uniqueMountID(path); ok {
		return fmt.Sprintf("mount unique-id=%d", id), nil
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	if id, ok := ids[filepath.Join(parent, filepath.Base(path))]; ok {
		return "mount id=" + strconv.Itoa(id), nil
	}
	return "", fmt.Errorf("chaos: %s is mounted but not in the mount table", path)
}
