package mount

import (
	"errors"
	"fmt"

	"github.com/tether/tether/cloud/files/realdir"
)

// ErrUnsafeSource: a mount's source is a symlink, or is not a real
// directory inside the directory it must be in (CheckSourceIn). Nothing was
// mounted. A bind mount follows every symlink in its source, so a symlink
// planted where content is expected would show what it points to (/etc,
// say) to a workload.
var ErrUnsafeSource = errors.New("mount: source is a symlink or outside its root")

// CheckSourceIn checks a source before it is mounted (realdir.In): it
// must be strictly below root; root, the source and every directory
// between them must be real directories, not symlinks; and with the
// symlinks above root resolved, the source must still be where its path
// says, in root. Every refusal wraps ErrUnsafeSource and names the
// offending path.
func CheckSourceIn(root, source string) error {
	if err := unsafe(realdir.In(root, source)); err != nil {
		return fmt.Errorf("mount: source %q: %w", source, err)
	}
	return nil
}

// realDir checks, without following it, that path is a directory; a
// symlink or another kind of file is ErrUnsafeSource.
func realDir(path string) error { return unsafe(realdir.Check(path)) }

// unsafe adds ErrUnsafeSource to a realdir refusal.
func unsafe(err error) error {
	if errors.Is(err, realdir.ErrUnsafe) {
		return fmt.Errorf("%w: %w", err, ErrUnsafeSource)
	}
	return err
}
