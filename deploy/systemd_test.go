package deploy

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
)

// unitFile maps "Section.Key" to its values in order (a key may repeat).
type unitFile map[string][]string

// parseUnit reads a systemd unit's key=value lines, rejecting lines that are
// neither comments, section headers nor assignments.
func parseUnit(t *testing.T, path string) unitFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.TrimSpace(k) == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", path, n, line)
			}
			key := section + "." + strings.TrimSpace(k)
			u[key] = append(u[key], strings.TrimSpace(v))
		}
	}
	return u
}

// last is the effective value of a key: the last assignment wins.
func (u unitFile) last(key string) (string, bool) {
	v := u[key]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

func TestSystemdUnit(t *testing.T) {
	u := parseUnit(t, "systemd/vllm-slo-exporter.service")
	for _, want := range []struct{ key, value string }{
		{"Service.DynamicUser", "yes"},
		{"Service.ProtectSystem", "strict"},
		{"Service.ProtectHome", "yes"},
		{"Service.NoNewPrivileges", "yes"},
		{"Service.PrivateTmp", "yes"},
		{"Service.PrivateDevices", "yes"},
		{"Service.RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"},
		{"Service.CapabilityBoundingSet", ""},
		{"Service.MemoryDenyWriteExecute", "yes"},
		{"Service.ProtectKernelTunables", "yes"},
		{"Service.ProtectKernelModules", "yes"},
		{"Service.ProtectControlGroups", "yes"},
		{"Service.RestrictSUIDSGID", "yes"},
		{"Service.LockPersonality", "yes"},
		{"Service.StateDirectory", "vllm-slo-exporter"},
		{"Service.Restart", "on-failure"},
		{"Service.ExecReload", "/bin/kill -HUP $MAINPID"},
		{"Install.WantedBy", "multi-user.target"},
	} {
		if got, ok := u.last(want.key); !ok || got != want.value {
			t.Errorf("%s = %q (set: %v), want %q", want.key, got, ok, want.value)
		}
	}
	if !slices.Contains(u["Service.SystemCallFilter"], "@system-service") {
		t.Errorf("SystemCallFilter %v lacks @system-service", u["Service.SystemCallFilter"])
	}

	exec, _ := u.last("Service.ExecStart")
	args := strings.Fields(exec)
	if len(args) == 0 || !strings.HasSuffix(args[0], "/vllm-slo-exporter") {
		t.Fatalf("ExecStart %q does not run vllm-slo-exporter", exec)
	}
	if addr, _ := flagValue(args, "web.listen-address"); portOf(addr) != "10042" {
		t.Errorf("ExecStart listens on %q, want port 10042", addr)
	}
	cfgPath, ok := flagValue(args, "config.file")
	if !ok || !strings.HasPrefix(cfgPath, "/etc/vllm-slo-exporter/") {
		t.Errorf("ExecStart --config.file=%q, want a file under /etc/vllm-slo-exporter (ConfigurationDirectory)", cfgPath)
	}

	// The unit's comment installs deploy/docker/config.yaml as that file;
	// its state file must be in StateDirectory, the one writable place
	// under ProtectSystem=strict.
	text, err := os.ReadFile("docker/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	state, _ := configFields(t, "docker/config.yaml", string(text))
	if !strings.HasPrefix(state, "/var/lib/vllm-slo-exporter/") {
		t.Errorf("state_file %q is not under /var/lib/vllm-slo-exporter (StateDirectory)", state)
	}
}
