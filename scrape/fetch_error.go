package scrape

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// The reasons a Fetch can fail, label values of
// vllm_slo_target_scrape_failures_total{reason} next to the Parse reasons.
const (
	// ReasonTimeout: the scrape timeout (or the caller's deadline) expired.
	ReasonTimeout = "timeout"
	// ReasonConnection: no response (DNS, refused, TLS, proxy, redirect loop…).
	ReasonConnection = "connection"
	// ReasonHTTPStatus: a response other than 2xx.
	ReasonHTTPStatus = "http_status"
	// ReasonBodyTooLarge: the (decompressed) body exceeds the size limit, or
	// the response headers exceed theirs (MaxHeaderBytes).
	ReasonBodyTooLarge = "body_too_large"
	// ReasonDecompress: a compressed body that cannot be decompressed, or an
	// unsupported Content-Encoding.
	ReasonDecompress = "decompress"
	// ReasonRead: the connection failed while the body was being read.
	ReasonRead = "read"
	// ReasonUnknown is what FailureReason says of an error it does not know.
	ReasonUnknown = "unknown"
)

// FetchError is a failed Fetch, classified by Reason.
type FetchError struct {
	// Reason is one of the fetch Reason* constants.
	Reason string
	// Err carries the context (target, method, URL) and the cause.
	Err error
}

// Error returns the message of Err, which already names the target and URL,
// with every URL in it redacted (RedactText): the cause may quote URLs the
// Fetcher did not build, such as an OAuth2 token_url.
func (e *FetchError) Error() string {
	if e.Err == nil {
		return e.Reason
	}
	return RedactText(e.Err.Error())
}

// Unwrap returns the cause.
func (e *FetchError) Unwrap() error { return e.Err }

// FailureReason classifies any error returned by Fetch, Parse or Scrape into a
// short reason for the failure counter, "unknown" if it is none of them.
func FailureReason(err error) string {
	var fe *FetchError
	if errors.As(err, &fe) {
		return fe.Reason
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return ReasonUnknown
}

// fetchErr builds a FetchError whose message names the target and request.
func (f *Fetcher) fetchErr(reason string, format string, args ...any) error {
	return &FetchError{Reason: reason, Err: fmt.Errorf("target %q: GET %s: "+format, append([]any{f.name, f.display}, args...)...)}
}

// RedactText returns s with every http:// or https:// URL in it shown as
// DisplayURL shows it (password and query values hidden). A URL runs to the
// next white space, quote or angle bracket. Errors quote URLs that other
// code built, out of reach of the Fetcher's own display URL: an OAuth2
// token endpoint's (token_url with an API key in its query), a proxy's, a
// redirect's. A URL that does not parse keeps only what precedes its query.
func RedactText(s string) string {
	var b strings.Builder
	rest := s
	for {
		i := urlStart(rest)
		if i < 0 {
			if b.Len() == 0 {
				return s
			}
			b.WriteString(rest)
			return b.String()
		}
		end := i + strings.IndexFunc(rest[i:], urlEnd)
		if end < i {
			end = len(rest)
		}
		b.WriteString(rest[:i])
		b.WriteString(redactOneURL(rest[i:end]))
		rest = rest[end:]
	}
}

// urlStart is the index of the first "http://" or "https://" in s (ASCII
// letters in any case), -1 if none. It compares bytes, so that invalid
// UTF-8 before a URL cannot shift the index.
func urlStart(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] != 'h' && s[i] != 'H' {
			continue
		}
		if hasPrefixFold(s[i:], "http://") || hasPrefixFold(s[i:], "https://") {
			return i
		}
	}
	return -1
}

// hasPrefixFold reports whether s begins with the ASCII prefix p, in any
// case.
func hasPrefixFold(s, p string) bool {
	return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p)
}

// urlEnd reports whether r ends a URL inside a text.
func urlEnd(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("\"'`<>", r)
}

// redactOneURL redacts one URL found in a text.
func redactOneURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil {
		if u.User == nil && u.RawQuery == "" {
			return raw
		}
		return DisplayURL(u)
	}
	if q := strings.IndexByte(raw, '?'); q >= 0 {
		return raw[:q+1] + "xxxxx"
	}
	if at := strings.LastIndexByte(raw, '@'); at >= 0 {
		return raw[:strings.Index(raw, "//")+2] + "xxxxx" + raw[at:]
	}
	return raw
}
