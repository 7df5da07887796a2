package daemon

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
)

// TestConnectionsTimeOut: clients that hold connections open without
// finishing with them are dropped by the server's timeouts, and their
// goroutines go with them. 100 each of: idle keep-alive connections after a
// request (dropped after IdleTimeout), clients that send half a request
// line and stop (after ReadHeaderTimeout), and clients that ask for
// /metrics and never read it (after WriteTimeout).
func TestConnectionsTimeOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		startRig(t, n, testConfig([]string{"a " + a.url()}, ""))
		advance(time.Minute)
		base := bubbleGoroutines()

		const each = 100
		var closed atomic.Int64
		// hold dials the daemon, sends request, reads what the server sends
		// (or not), and counts the connection once the server closes it.
		hold := func(request string, read bool) {
			conn, err := n.dial(context.Background(), "tcp", "daemon:80")
			if err != nil {
				t.Error(err)
				return
			}
			go func() {
				defer conn.Close()
				if _, err := io.WriteString(conn, request); err != nil {
					t.Error(err)
					return
				}
				if !read {
					<-time.After(exporter.WriteTimeout + time.Second) // a reader that never comes back in time
				}
				io.Copy(io.Discard, conn) // until the server closes
				closed.Add(1)
			}()
		}
		for range each {
			hold("GET /-/healthy HTTP/1.1\r\nHost: daemon\r\n\r\n", true)
			hold("GET /metrics HTT", true)
			hold("GET /metrics HTTP/1.1\r\nHost: daemon\r\n\r\n", false)
		}
		synctest.Wait()
		if got := bubbleGoroutines() - base; got < 3*each {
			t.Fatalf("%d goroutines for %d held connections", got, 3*each)
		}
		timeouts := []time.Duration{exporter.IdleTimeout, exporter.ReadHeaderTimeout, exporter.WriteTimeout + time.Second}
		longest := max(timeouts[0], timeouts[1], timeouts[2])
		advance(longest + time.Second)
		if got := closed.Load(); got != 3*each {
			t.Errorf("%d of %d held connections closed by the server after %v", got, 3*each, longest+time.Second)
		}
		if got := bubbleGoroutines(); got != base {
			t.Errorf("%d goroutines once the held connections timed out, %d before them", got, base)
		}
	})
}
