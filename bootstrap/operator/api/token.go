package api

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether/tether/cloud/files/durable"
)

// TokenFile is the name of the API token under the data directory.
const TokenFile = "api-token"

// LoadOrCreateToken returns the bearer token stored in dataDir, creating a
// random one (32 bytes, hex) with mode 0600 at first start. A token file
// readable by others is refused.
func LoadOrCreateToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, TokenFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		st, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		if st.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("api: %s is accessible by others (mode %v): chmod 600 it", path, st.Mode().Perm())
		}
		tok := strings.TrimSpace(string(b))
		if len(tok) < 32 {
			return "", fmt.Errorf("api: %s holds no usable token", path)
		}
		return tok, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("api: reading token: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(raw)
	// Created whole or not at all (a crash cannot leave a part that the
	// next start refuses), and never over a token that exists.
	if err := durable.Create(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("api: creating token: %w", err)
	}
	return tok, nil
}
