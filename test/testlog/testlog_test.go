package testlog

import (
	"strings"
	"sync"
	"testing"
)

// TestBufferConcurrentWrites writes from many goroutines while reading: under
// -race an unlocked buffer fails, and every line must arrive whole.
func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if _, err := b.Write([]byte("line\n")); err != nil {
					t.Error(err)
				}
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Fatalf("read %d whole lines, want 800", got)
	}
}
