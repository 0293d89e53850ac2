package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The alerting rules shipped in deploy/prometheus pass promtool's check,
// and its unit tests (vodcluster-alerts-test.yml) pass.
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

// Every alert of vodcluster-alerts.yml has a promtool unit test in
// vodcluster-alerts-test.yml in which it fires (and so whose labels and
// annotations are checked), and deploy/README.md names it; the tests name
// no alert the rules do not have (promtool passes a test of an alert that
// does not exist, expecting none).
func TestAlertRulesTestedAndDocumented(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy")
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	for _, f := range []struct {
		path string
		v    any
	}{{"prometheus/vodcluster-alerts.yml", &rules}, {"prometheus/vodcluster-alerts-test.yml", &tests}} {
		b, err := os.ReadFile(filepath.Join(dir, f.path))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, f.v); err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts[r.Alert] = true
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alert read from vodcluster-alerts.yml")
	}
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if !alerts[a.Alertname] {
				t.Errorf("vodcluster-alerts-test.yml tests %s, which vodcluster-alerts.yml does not have", a.Alertname)
			}
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	for a := range alerts {
		if !fires[a] {
			t.Errorf("%s: no unit test in vodcluster-alerts-test.yml in which it fires", a)
		}
		if !strings.Contains(string(readme), "`"+a+"`") {
			t.Errorf("%s: deploy/README.md does not name it", a)
		}
	}
}
