package names

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The words a volume hands its storage driver (a CSI driver) besides its
// name: its file system type, its mount options, its volume attributes
// and the name of its secrets file. Each goes into a driver's request,
// and a secret's name into a path, so each is checked as strictly as a
// name: these rules refuse what could be read two ways (a comma splits a
// mount option list) or point elsewhere (a separator in a file name).

// KindSecret names a secrets file (a volume's csi.secretRef) in errors:
// it must be a ValidName, as it becomes one path component.
const KindSecret = "secret name"

// Bounds of what a volume hands its driver. MaxFsTypeLen is a generous
// file system name ("ext4", "xfs", "btrfs", "zfs", "vfat"); the others are
// the CSI spec's size limits: 128 bytes for a string, 4 KiB for a map.
const (
	MaxFsTypeLen       = 32
	MaxMountOptionLen  = 128
	MaxMountOptions    = 64
	MaxAttributeKeyLen = 128
	MaxAttributesBytes = 4096
)

// ValidFsType checks a file system type: 1 to MaxFsTypeLen bytes of
// lowercase letters and digits ("ext4", "xfs").
func ValidFsType(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s: must not be empty", quote(s))
	case len(s) > MaxFsTypeLen:
		return fmt.Errorf("%s: is %d bytes long, at most %d are allowed", quote(s), len(s), MaxFsTypeLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return fmt.Errorf("%s: only lowercase letters and digits are allowed", quote(s))
		}
	}
	return nil
}

// ValidMountOptions checks a volume's mount options: at most
// MaxMountOptions, each 1 to MaxMountOptionLen bytes of printable ASCII
// without a comma (which would split it in two), a space or a quote; no
// NUL or line break can pass. The error names the option by its index.
func ValidMountOptions(opts []string) error {
	if len(opts) > MaxMountOptions {
		return fmt.Errorf("%d options, at most %d are allowed", len(opts), MaxMountOptions)
	}
	for i, o := range opts {
		if err := validMountOption(o); err != nil {
			return fmt.Errorf("[%d] %w", i, err)
		}
	}
	return nil
}

func validMountOption(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s: must not be empty", quote(s))
	case len(s) > MaxMountOptionLen:
		return fmt.Errorf("%s: is %d bytes long, at most %d are allowed", quote(s), len(s), MaxMountOptionLen)
	case strings.Contains(s, ","):
		return fmt.Errorf("%s: a comma would split it: give each option on its own", quote(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' {
			return fmt.Errorf("%s: only printable ASCII without spaces, quotes or backslashes is allowed", quote(s))
		}
	}
	return nil
}

// ValidVolumeAttributes checks a volume's attributes (the CSI
// volume_context its driver returned when it created the volume): keys
// of 1 to MaxAttributeKeyLen bytes, keys and values free of NUL and
// invalid UTF-8, all of them together at most MaxAttributesBytes.
func ValidVolumeAttributes(attrs map[string]string) error {
	total := 0
	for k, v := range attrs {
		total += len(k) + len(v)
		switch {
		case k == "":
			return fmt.Errorf("an empty key")
		case len(k) > MaxAttributeKeyLen:
			return fmt.Errorf("key %s: is %d bytes long, at most %d are allowed", quote(k), len(k), MaxAttributeKeyLen)
		case !clean(k):
			return fmt.Errorf("key %s: NUL and invalid UTF-8 are not allowed", quote(k))
		case !clean(v):
			return fmt.Errorf("the value of key %s: NUL and invalid UTF-8 are not allowed", quote(k))
		}
	}
	if total > MaxAttributesBytes {
		return fmt.Errorf("%d bytes of keys and values, at most %d are allowed", total, MaxAttributesBytes)
	}
	return nil
}

// clean reports whether s is valid UTF-8 without NUL.
func clean(s string) bool { return !strings.ContainsRune(s, 0) && utf8.ValidString(s) }

// quote quotes s for an error, cut at quoteLen bytes.
func quote(s string) string {
	if len(s) > quoteLen {
		return fmt.Sprintf("%q...", s[:quoteLen])
	}
	return fmt.Sprintf("%q", s)
}
