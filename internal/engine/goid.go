package engine

import (
	"runtime"
)

// goid returns the calling goroutine's id, read from the header of its
// stack trace ("goroutine 18 [running]:"). Close uses it to tell whether it
// is called on the monitor goroutine, from one of the monitor's callbacks,
// where waiting for the monitor to exit would wait for itself. It costs a
// stack header formatting (about a microsecond): never on a data path.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
