package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key to
// dir and returns their paths and a pool trusting the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeFile(t, dir, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeFile(t, dir, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestTLSBasicAuth serves our endpoint with TLS and basic auth from an
// exporter-toolkit --web.config.file.
func TestTLSBasicAuth(t *testing.T) {
	t.Parallel()
	s := startSim(t, nil)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := writeFile(t, dir, "web.yml", "tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+
		"\nbasic_auth_users:\n  alice: "+string(hash)+"\n")
	cfg := writeFile(t, dir, "config.yaml", liveConfig("0.99", [][2]string{{liveTarget, s.url()}}, ""))
	addr, probeAddr := freeAddr(t), freeAddr(t)
	p := start(t, "run", "--config.file="+cfg, "--web.listen-address="+addr, "--web.config.file="+webCfg, "--web.probe-listen-address="+probeAddr)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + addr

	fetch := func(user, pass, path string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pass)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = readBody(&b, resp)
		return resp.StatusCode, b.String()
	}
	waitFor(t, 20*time.Second, "/-/ready over TLS with the password", func() bool {
		if !p.running() {
			t.Fatalf("daemon exited with %d", p.exit)
		}
		code, _ := fetch("alice", "s3cret", "/-/ready")
		return code == http.StatusOK
	})
	waitFor(t, 5*time.Second, "target_up over TLS", func() bool {
		code, body := fetch("alice", "s3cret", "/metrics")
		return code == http.StatusOK && strings.Contains(body, `vllm_slo_target_up{target="a"} 1`)
	})
	for _, c := range []struct{ user, pass string }{{"alice", "wrong"}, {"bob", "s3cret"}, {"", ""}} {
		code, body := fetch(c.user, c.pass, "/metrics")
		if code != http.StatusUnauthorized {
			t.Errorf("user %q password %q: status %d, want 401", c.user, c.pass, code)
		}
		if strings.Contains(body, "vllm_slo_") {
			t.Errorf("user %q password %q: body leaks series:\n%s", c.user, c.pass, tail(body, 500))
		}
	}
	// The lifecycle API is off without --web.enable-lifecycle, even with
	// the password.
	req, _ := http.NewRequest(http.MethodPost, base+"/-/reload", nil)
	req.SetBasicAuth("alice", "s3cret")
	if resp, err := client.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /-/reload without --web.enable-lifecycle: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	// The probe address answers the kubelet's probes, which carry no
	// credentials, and serves nothing else.
	for path, want := range map[string]int{"/-/healthy": http.StatusOK, "/-/ready": http.StatusOK, "/metrics": http.StatusNotFound, "/config": http.StatusNotFound} {
		if code, _ := get(t, nil, "http://"+probeAddr+path); code != want {
			t.Errorf("GET %s on the probe address: %d, want %d", path, code, want)
		}
	}
	// Plain HTTP to the TLS port gets no metrics.
	plain := &http.Client{Timeout: 5 * time.Second}
	req, _ = http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.SetBasicAuth("alice", "s3cret")
	if resp, err := plain.Do(req); err == nil {
		var b strings.Builder
		_, _ = readBody(&b, resp)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(b.String(), "vllm_slo_") {
			t.Errorf("plain HTTP to the TLS port: status %d, body %q", resp.StatusCode, tail(b.String(), 300))
		}
	}
}

// TestLandingPageChromium renders the landing page in headless Chromium: the
// target and SLO names show, and a hostile model name is text, not markup.
func TestLandingPageChromium(t *testing.T) {
	t.Parallel()
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required in CI: %v", err)
		}
		t.Skipf("chromium not installed: %v", err)
	}
	const evil = "<script>alert(1)</script>"
	s := startSim(t, func(c *sim.Config) { c.Models[0].Name = evil })
	d := startDaemon(t, t.TempDir(), liveConfig("0.99", [][2]string{{"landing-target", s.url()}}, ""))
	waitFor(t, 10*time.Second, "a window of the hostile model", func() bool {
		return len(d.metrics(t).find("vllm_slo_attainment_ratio", map[string]string{"model_name": evil})) > 0
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(t.TempDir(), "chromium"), "--dump-dom", d.base+"/")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(stderr.String(), 2000))
	}
	dom := string(out)
	for _, want := range []string{"landing-target", "interactive", "&lt;script&gt;alert(1)&lt;/script&gt;"} {
		if !strings.Contains(dom, want) {
			t.Errorf("dumped DOM lacks %q:\n%s", want, tail(dom, 3000))
		}
	}
	if strings.Contains(strings.ToLower(dom), "<script") {
		t.Errorf("dumped DOM holds a <script> element:\n%s", tail(dom, 3000))
	}
}

// TestDemo runs the demo command: it prints its URLs, becomes ready, scrapes
// its simulator, and exits 0 on SIGINT.
func TestDemo(t *testing.T) {
	t.Parallel()
	web, simAddr := freeAddr(t), freeAddr(t)
	p := start(t, "demo", "--web.listen-address="+web, "--simulator.listen-address="+simAddr)
	waitReady(t, p, nil, "http://"+web)
	waitFor(t, 10*time.Second, "the demo's printed URLs", func() bool {
		return containsAll(p.stdout.String(), "http://"+web+"/", "http://"+web+"/metrics", "http://"+simAddr+"/metrics")
	})
	// The demo evaluates every 5s, and /-/ready does not wait for the first
	// evaluation after the first scrape (see TestReadyMeansServing): poll.
	waitFor(t, 12*time.Second, "the demo's target_up 1", func() bool {
		code, body := get(t, nil, "http://"+web+"/metrics")
		return code == http.StatusOK && strings.Contains(body, `vllm_slo_target_up{gpu="simulated",target="demo"} 1`)
	})
	if code := p.stop(t, sigint, 15*time.Second); code != 0 {
		t.Errorf("demo exit code after SIGINT = %d, want 0", code)
	}
}
