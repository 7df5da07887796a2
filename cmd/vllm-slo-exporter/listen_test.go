package main

import (
	"net"
	"testing"
)

// TestListenMovesOffATakenDefault: the demo's default ports move to a free
// port when another process holds them, and an address the user chose does
// not (it fails, naming the cause).
func TestListenMovesOffATakenDefault(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()

	ln, err := listen(addr, true)
	if err != nil {
		t.Fatalf("default address taken: %v, want a free port", err)
	}
	defer ln.Close()
	if ln.Addr().String() == addr {
		t.Errorf("listening on the taken address %s", addr)
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); host != "127.0.0.1" {
		t.Errorf("moved to host %s, want the same host", host)
	}
	if _, err := listen(addr, false); err == nil {
		t.Errorf("a chosen, taken address was accepted")
	}
}
