package engine

import "sync"

// goWG runs f on a new goroutine tracked by wg. sync.WaitGroup.Go needs Go
// 1.25; the module's tests build with the go directive's version.
func goWG(wg *sync.WaitGroup, f func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		f()
	}()
}
