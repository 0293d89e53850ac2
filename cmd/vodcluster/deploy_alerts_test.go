package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The alerting rules shipped in deploy/prometheus pass promtool's check,
// and its unit tests (vodcluster-alerts-test.yml: the alerts that compute
// more than a threshold, e.g. viewers served across sites) pass.
func TestAlertRules(t *testing.T) {
	promtool := needTool(t, "promtool")
	dir := filepath.Join("..", "..", "deploy", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "vodcluster-alerts.yml"},
		{"test", "rules", "vodcluster-alerts-test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
