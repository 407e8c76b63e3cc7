package engine

import (
	"context"
	"fmt"
)

// cancelEvery is how many documents a long call (a scan, an update's
// preparation, an index build's scan) handles between two looks at its
// context: often enough to stop within microseconds, rarely enough to
// cost nothing measurable.
const cancelEvery = 256

// cancelHook, if set (tests only, never concurrently with a call that may
// read it), is called each time a long call looks at its context, just
// before it does: a test cancels from it to stop a call mid-scan.
var cancelHook func()

// checkCtx reports ctx's error, calling cancelHook first. A nil ctx never
// stops a call (internal callers with nothing to cancel).
func checkCtx(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	if cancelHook != nil {
		cancelHook()
	}
	return ctx.Err()
}

// ctxError wraps a context's error with the collection's name; errors.Is
// still matches context.Canceled and context.DeadlineExceeded.
func ctxError(name string, err error) error {
	return fmt.Errorf("collection %q: %w", name, err)
}

// scanError is ctxError of a scan's error, nil if the scan ended well.
func scanError(name string, err error) error {
	if err == nil {
		return nil
	}
	return ctxError(name, err)
}
