package chaos

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// mountedImage returns the image file that the kernel shows bound to the
// device of the topmost mount at target (the mount table's last entry
// there); a device that is not a bound loop device is described instead,
// so that it never equals an image.
func mountedImage(target string) (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	target = filepath.Clean(target)
	dev := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// ID parent MAJ:MIN root mount-point ...
		f := strings.Fields(sc.Text())
		if len(f) >= 5 && unescapeMountinfo(f[4]) == target {
			dev = f[2]
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if dev == "" {
		return "", errNotInTable
	}
	raw, err := os.ReadFile("/sys/dev/block/" + dev + "/loop/backing_file")
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("device %s, not a bound loop device", dev), nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(raw), "\n"), nil
}

// unescapeMountinfo undoes the mount table's octal escapes (\040 for a
// space, and tab, newline and backslash likewise).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				out.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		out.WriteByte(s[i])
	}
	return out.String()
}
