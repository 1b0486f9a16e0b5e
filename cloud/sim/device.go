package sim

import "github.com/tether/tether/cloud"

// freeDevice returns the lowest free device path of an instance whose
// attached volumes have the device paths of used: "/dev/xvdba",
// "/dev/xvdbb", ..., "/dev/xvdbz", "/dev/xvdca", ..., "/dev/xvdzz",
// "/dev/xvdaaa", ... A path is reused once its volume is detached.
func freeDevice(used map[cloud.VolumeID]string) string {
	taken := make(map[string]bool, len(used))
	for _, dev := range used {
		taken[dev] = true
	}
	for i := 0; ; i++ {
		if dev := deviceName(i); !taken[dev] {
			return dev
		}
	}
}

// deviceName is the i-th device path (i >= 0): the suffix is i+53 written in
// bijective base 26 (a=1 ... z=26), so 0 is "ba" and the names never repeat.
func deviceName(i int) string {
	var suffix []byte
	for n := i + 53; n > 0; n = (n - 1) / 26 {
		suffix = append([]byte{byte('a' + (n-1)%26)}, suffix...)
	}
	return "/dev/xvd" + string(suffix)
}
