package scrape

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/config"
)

// TestOAuth2TokenURLHidden: the query values of an OAuth2 token_url (and the
// password of a URL the token endpoint's error names) never appear in a
// fetch error, whichever way the token request fails: the error text goes to
// the log and the console.
func TestOAuth2TokenURLHidden(t *testing.T) {
	const secret = "TOKEN-URL-SECRET"
	target := newServer(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("up 1\n")) })
	refusing := newServer(t, http.NotFound)
	refusing.Close()
	failing := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
	})
	for name, tc := range map[string]struct {
		tokenURL string
		shown    bool // the error names the token URL
	}{
		"refused":  {refusing.URL + "/token?api_key=" + secret + "&tenant=t1", true},
		"401":      {failing.URL + "/token?api_key=" + secret + "&tenant=t1", false},
		"password": {strings.Replace(refusing.URL, "http://", "http://user:"+secret+"@", 1) + "/token?api_key=" + secret, true},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := config.DefaultHTTPClientConfig
			cfg.OAuth2 = &config.OAuth2{ClientID: "exporter", ClientSecret: "client-secret", TokenURL: tc.tokenURL}
			f := newFetcher(t, target.URL+"/metrics", cfg, 0, 0)
			_, err := f.Fetch(context.Background())
			if err == nil {
				t.Fatal("fetch succeeded without a token")
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "client-secret") {
				t.Errorf("fetch error shows the secret: %v", err)
			}
			if tc.shown && !strings.Contains(err.Error(), "api_key=xxxxx") {
				t.Errorf("fetch error does not show the token URL with its query values hidden (api_key=xxxxx): %v", err)
			}
		})
	}
}

// TestRedactText: every http(s) URL in a text has its query values and
// password hidden, the rest of the text is unchanged.
func TestRedactText(t *testing.T) {
	for in, want := range map[string]string{
		"no url here": "no url here",
		`Post "https://a/t?k=S&x=1": dial tcp: refused`:    `Post "https://a/t?k=xxxxx&x=xxxxx": dial tcp: refused`,
		"GET http://u:pw@h:1/m?t=S failed":                 "GET http://u:xxxxx@h:1/m?t=xxxxx failed",
		"two http://a/?k=1 and https://b/?k=2,3 end":       "two http://a/?k=xxxxx and https://b/?k=xxxxx end",
		"plain http://127.0.0.1:8000/metrics stays":        "plain http://127.0.0.1:8000/metrics stays",
		"HTTPS://H/X?K=S upper":                            "https://H/X?K=xxxxx upper",
		"broken http://[::1/x?k=SECRET% ok":                "broken http://[::1/x?xxxxx ok",
		"at the end https://h/p?token=abc":                 "at the end https://h/p?token=xxxxx",
		"quoted 'http://h/?k=v' and <http://h/?k=v>":       "quoted 'http://h/?k=xxxxx' and <http://h/?k=xxxxx>",
		"http://h/p?k=v\nnext line":                        "http://h/p?k=xxxxx\nnext line",
		"oauth2: cannot fetch token: Post \"http://h/?a=b": "oauth2: cannot fetch token: Post \"http://h/?a=xxxxx",
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// FuzzRedactText: whatever surrounds it, a query value planted in a URL
// never survives RedactText, and a text without a URL comes back unchanged.
func FuzzRedactText(f *testing.F) {
	f.Add("Post \"", "\": dial tcp: refused")
	f.Add("http://[::1", "?x=%zz")
	f.Add("", "")
	f.Add("user:pw@", "&b=c#frag")
	f.Fuzz(func(t *testing.T, before, after string) {
		const planted = "PLANTEDVALUE"
		if strings.Contains(before, planted) || strings.Contains(after, planted) {
			t.Skip()
		}
		text := before + " https://h.example/token?api_key=" + planted + after
		if got := RedactText(text); strings.Contains(got, planted) {
			t.Fatalf("RedactText(%q) = %q shows the planted value", text, got)
		}
		lower := strings.ToLower(before)
		if !strings.Contains(lower, "http://") && !strings.Contains(lower, "https://") {
			if got := RedactText(before); got != before {
				t.Fatalf("RedactText(%q) = %q, want it unchanged (no URL)", before, got)
			}
		}
	})
}
