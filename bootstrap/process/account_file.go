package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/tether/tether/cloud/files/durable"
)

// An account file is a cloud account's own small state (loop-account.json,
// csi-account.json: the owner tag and what the account must remember): read
// once when the account opens, replaced durably (a new file renamed into
// place, then the directory synced) on every change.

// readAccountFile fills into from path; a missing file leaves into as it
// is. who names the account in errors.
func readAccountFile(path, who string, into any) error {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", who, err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("%w: %s is corrupt: %v; restore it from a backup, or remove it if you accept that tether forgets the account's owner tag", ErrUntrusted, path, err)
	}
	return nil
}

// writeAccountFile makes v the content of path, durably.
func writeAccountFile(path, who string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("%s: writing %s: %w", who, path, err)
	}
	return nil
}
