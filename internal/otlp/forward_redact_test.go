package otlp

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"
)

// logSink is a slog handler's output that tells when a record arrived.
type logSink struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	line chan struct{}
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.buf.Write(p)
	select {
	case s.line <- struct{}{}:
	default:
	}
	return n, err
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// refusedAddr returns host:port on 127.0.0.1 where nothing listens.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestForwardErrorsRedactSecrets: a failing forward is logged without the
// secrets of the URLs its error quotes: the downstream's own query values
// (net/http's error repeats the request URL, query included), the
// password of its URL, and an OAuth2 token_url's query values (the
// client's error names the token endpoint). Before, the log line's url and
// err showed each in clear.
func TestForwardErrorsRedactSecrets(t *testing.T) {
	addr := refusedAddr(t)
	answers500 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer answers500.Close()
	oauth := func(t *testing.T) *http.Client {
		cfg := commoncfg.HTTPClientConfig{OAuth2: &commoncfg.OAuth2{
			ClientID: "id", ClientSecret: "client-secret-value",
			TokenURL: "http://" + addr + "/token?api_key=token-secret-value",
		}}
		c, err := commoncfg.NewClientFromConfig(cfg, "otlp_forward")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cases := []struct {
		name, url string
		client    func(t *testing.T) *http.Client
		secrets   []string
	}{
		{"query secret, refused", "http://" + addr + TracesPath + "?api_key=query-secret-value", nil, []string{"query-secret-value"}},
		{"password, refused", "http://user:url-password-value@" + addr + TracesPath, nil, []string{"url-password-value"}},
		{"query secret, status 500", answers500.URL + TracesPath + "?api_key=query-secret-value", nil, []string{"query-secret-value"}},
		{"oauth2 token_url", "http://" + addr + TracesPath, oauth, []string{"token-secret-value", "client-secret-value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client := http.DefaultClient
			if c.client != nil {
				client = c.client(t)
			}
			sink := &logSink{line: make(chan struct{}, 1)}
			fwd := NewForwarder(c.url, client, 5*time.Second, 4, slog.New(slog.NewTextHandler(sink, nil)))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- fwd.Run(ctx) }()
			fwd.Enqueue(export(testSpan{"a", time.Second, 1}))
			select {
			case <-sink.line:
			case <-time.After(30 * time.Second):
				t.Fatal("no log line within 30s of a failing forward")
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			logged := sink.String()
			if !strings.Contains(logged, "forwarding OTLP export failed") {
				t.Fatalf("log %q: not the forwarding failure", logged)
			}
			for _, s := range c.secrets {
				if strings.Contains(logged, s) {
					t.Errorf("the log shows the secret %q: %s", s, logged)
				}
			}
			if !strings.Contains(logged, addr) && !strings.Contains(logged, answers500.Listener.Addr().String()) {
				t.Errorf("the log no longer names the downstream: %s", logged)
			}
		})
	}
}
