package scrape

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	"github.com/prometheus/common/version"
)

// acceptHeader prefers OpenMetrics 1.0 (which the Rust frontend serves), then
// Prometheus text, then anything. Protobuf is not asked for.
const acceptHeader = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1"

// maxRedirects bounds redirect chains, as net/http does by default.
const maxRedirects = 10

// MaxHeaderBytes bounds a response's status line and headers, counted as
// sent (names, values, separators), beside the body size limit: a larger
// response fails as ReasonBodyTooLarge. vLLM sends a few hundred bytes.
// net/http itself reads at most 10 MiB of headers (its Transport's
// default) and fails beyond: that failure is ReasonBodyTooLarge too, so
// every oversized response is counted alike, and a scrape's memory is
// bounded by the body size limit plus those 10 MiB.
const MaxHeaderBytes = 1 << 20

// headersTooLarge is how net/http's Transport words the failure of a
// response whose headers exceed its limit (the error has no type of its
// own).
const headersTooLarge = "server response headers exceeded"

// Fetcher GETs one target's metrics page with the target's HTTP settings
// (auth, TLS, proxy), a timeout and a body size limit. It is safe for
// concurrent use, though a target's loop never overlaps itself.
type Fetcher struct {
	name      string
	url       string
	display   string // url as DisplayURL shows it, for messages
	client    *http.Client
	timeout   time.Duration
	bodyLimit int64
	userAgent string
}

// Response is one successful fetch.
type Response struct {
	// Body is the exposition, decompressed.
	Body []byte
	// ContentType is the response's Content-Type header, as sent.
	ContentType string
	// Status is the HTTP status code.
	Status int
	// Duration is the time from sending the request to the end of the body.
	Duration time.Duration
}

// NewFetcher builds a fetcher for the target called name at rawURL. timeout
// bounds each fetch (0 means only the caller's context does); bodyLimit is the
// largest decompressed body accepted, in bytes (0 means no limit). opts are
// passed on to the HTTP client (the daemon's tests dial in memory with them).
func NewFetcher(name, rawURL string, httpCfg config.HTTPClientConfig, timeout time.Duration, bodyLimit int64, opts ...config.HTTPClientOption) (*Fetcher, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the raw URL, secrets included
		}
		return nil, fmt.Errorf("target %q: url: %w", name, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("target %q: url %q: scheme must be http or https", name, DisplayURL(u))
	}
	if timeout < 0 || bodyLimit < 0 {
		return nil, fmt.Errorf("target %q: negative timeout %v or body limit %d", name, timeout, bodyLimit)
	}
	if err := httpCfg.Validate(); err != nil {
		return nil, fmt.Errorf("target %q: http client config: %w", name, err)
	}
	ua := "vllm-slo-exporter/" + versionString()
	client, err := config.NewClientFromConfig(httpCfg, name, append([]config.HTTPClientOption{config.WithUserAgent(ua)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("target %q: http client: %w", name, err)
	}
	if httpCfg.FollowRedirects {
		// A typed error lets the loop be classified; net/http's own is a bare string.
		client.CheckRedirect = func(_ *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return errRedirectLoop
			}
			return nil
		}
	}
	return &Fetcher{name: name, url: rawURL, display: DisplayURL(u), client: client, timeout: timeout, bodyLimit: bodyLimit, userAgent: ua}, nil
}

// DisplayURL is u as views, logs and error messages show it: the password
// of a user:password@ part and the value of every query parameter replaced
// by "xxxxx" (a query often carries an API key: ?api_key=...). Parameter
// names stay, so the operator can still tell URLs apart.
func DisplayURL(u *url.URL) string {
	shown := *u
	if shown.RawQuery != "" {
		q := shown.Query()
		for k, vs := range q {
			for i := range vs {
				vs[i] = "xxxxx"
			}
			q[k] = vs
		}
		shown.RawQuery = q.Encode()
	}
	return shown.Redacted()
}

// hideURL replaces the URL inside err's *url.Error (net/http's client error
// repeats the request URL, query included) by the fetcher's display URL.
func (f *Fetcher) hideURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = f.display
	}
	return err
}

// errRedirectLoop stops a redirect chain that is too long.
var errRedirectLoop = errors.New("stopped after " + strconv.Itoa(maxRedirects) + " redirects")

// versionString is the build's version, "unknown" when not stamped.
func versionString() string {
	if version.Version == "" {
		return "unknown"
	}
	return version.Version
}

// Close closes the fetcher's idle connections. A stopped loop calls it so
// that the keep-alive connections of a target removed by a reload do not
// linger until their idle timeout.
func (f *Fetcher) Close() { f.client.CloseIdleConnections() }

// Fetch GETs the target once. Every failure is a *FetchError naming the
// target and URL; a non-2xx status is a failure (ReasonHTTPStatus). When a
// response arrived but failed, the returned Response still carries its
// Status, ContentType and Duration (never a body), for recordings.
func (f *Fetcher) Fetch(ctx context.Context) (Response, error) {
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return Response{}, f.fetchErr(ReasonConnection, "new request: %w", err)
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", f.userAgent)
	if dl, ok := ctx.Deadline(); ok {
		secs := time.Until(dl).Seconds()
		req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(max(secs, 0), 'f', -1, 64))
	}

	start := time.Now()
	resp, err := f.client.Do(req)
	if err != nil {
		return Response{}, f.fetchErr(f.requestReason(ctx, err), "%w", f.hideURL(err))
	}
	defer resp.Body.Close()
	if n := headerBytes(resp); n > MaxHeaderBytes {
		failed := Response{ContentType: resp.Header.Get("Content-Type"), Status: resp.StatusCode, Duration: time.Since(start)}
		return failed, f.fetchErr(ReasonBodyTooLarge, "response headers of %d bytes exceed the limit of %d bytes", n, MaxHeaderBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so the connection can be reused; ignore failures.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		failed := Response{ContentType: resp.Header.Get("Content-Type"), Status: resp.StatusCode, Duration: time.Since(start)}
		return failed, &FetchError{Reason: ReasonHTTPStatus,
			Err: fmt.Errorf("target %q: GET %s: status %d", f.name, f.display, resp.StatusCode)}
	}
	body, err := f.readBody(ctx, resp)
	if err != nil {
		return Response{ContentType: resp.Header.Get("Content-Type"), Status: resp.StatusCode, Duration: time.Since(start)}, err
	}
	return Response{
		Body:        body,
		ContentType: resp.Header.Get("Content-Type"),
		Status:      resp.StatusCode,
		Duration:    time.Since(start),
	}, nil
}

// requestReason classifies an error of client.Do.
func (f *Fetcher) requestReason(ctx context.Context, err error) string {
	switch {
	case isTimeout(ctx, err):
		return ReasonTimeout
	case strings.Contains(err.Error(), headersTooLarge):
		return ReasonBodyTooLarge
	}
	return ReasonConnection
}

// headerBytes is the size of resp's status line and headers as sent, near
// enough: "HTTP/1.1 200 OK\r\n", then "Name: value\r\n" for every value.
func headerBytes(resp *http.Response) int {
	n := len(resp.Proto) + 1 + len(resp.Status) + 2
	for name, values := range resp.Header {
		for _, v := range values {
			n += len(name) + 2 + len(v) + 2
		}
	}
	return n
}

// isTimeout reports whether err stems from a deadline, ours or the network's.
func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// readBody reads (and if needed decompresses) the body within the size limit.
func (f *Fetcher) readBody(ctx context.Context, resp *http.Response) ([]byte, error) {
	raw := &recordingReader{r: resp.Body}
	var r io.Reader = raw
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return nil, f.bodyErr(ctx, raw, ReasonDecompress, "gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, f.fetchErr(ReasonDecompress, "unsupported Content-Encoding %q", enc)
	}
	if f.bodyLimit > 0 {
		r = io.LimitReader(r, f.bodyLimit+1)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, f.bodyErr(ctx, raw, ReasonDecompress, "read body: %w", err)
	}
	if f.bodyLimit > 0 && int64(len(body)) > f.bodyLimit {
		return nil, f.fetchErr(ReasonBodyTooLarge, "body exceeds the limit of %d bytes", f.bodyLimit)
	}
	return body, nil
}

// bodyErr classifies an error met while reading the body: the network's
// failure (timeout or read) when the raw body failed, else the given reason
// (the decompressor rejected what arrived).
func (f *Fetcher) bodyErr(ctx context.Context, raw *recordingReader, reason, format string, err error) error {
	if raw.err != nil {
		reason = ReasonRead
		if isTimeout(ctx, raw.err) {
			reason = ReasonTimeout
		}
	}
	return f.fetchErr(reason, format, err)
}

// recordingReader remembers the first error (other than EOF) of the
// underlying reader, so that read failures can be told from bad data.
type recordingReader struct {
	r   io.Reader
	err error
}

func (rr *recordingReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && rr.err == nil {
		rr.err = err
	}
	return n, err
}

// Scrape fetches the target and parses the body with profile p, stamping the
// snapshot with now. Parse errors are wrapped with the target and URL, and
// keep their *ParseError for FailureReason.
func (f *Fetcher) Scrape(ctx context.Context, p Profile, now time.Time) (*Snapshot, Response, error) {
	resp, err := f.Fetch(ctx)
	if err != nil {
		return nil, resp, err
	}
	snap, err := Parse(resp.Body, resp.ContentType, p, now)
	if err != nil {
		return nil, resp, fmt.Errorf("target %q: parse %s: %w", f.name, f.display, err)
	}
	return snap, resp, nil
}
