// Package testlog holds what the tests of several packages need to read a
// log while goroutines or a subprocess write it. It is test harness: no
// product package imports it.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a writer (a logger on another goroutine, a
// subprocess's stdout) and a reading test may use at once.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p under the lock.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
