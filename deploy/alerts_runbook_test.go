package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// runbookBase is where alerts link: docs/alerts.md on the repository's
// default branch (scripts/rename.sh rewrites the module path in it).
const runbookBase = "https://github.com/july/template/blob/main/docs/alerts.md#"

// Every alert has a severity Alertmanager's conventions know (critical or
// warning) and a runbook_url to its own section of docs/alerts.md, and
// every section there belongs to an alert that exists.
func TestAlertsHaveRunbooks(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/alerts.md")
	require.NoError(t, err)
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(doc), -1) {
		sections[m[1]] = true
	}

	files, err := filepath.Glob("prometheus/*.yml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var rules struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `yaml:"alert"`
					Labels      map[string]string `yaml:"labels"`
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		require.NoError(t, yaml.Unmarshal(b, &rules), f)
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue // a recording rule
				}
				seen[r.Alert] = true
				require.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], "%s %s: severity", f, r.Alert)
				require.Equal(t, runbookBase+strings.ToLower(r.Alert), r.Annotations["runbook_url"], "%s %s: runbook_url", f, r.Alert)
				require.True(t, sections[r.Alert], "%s %s: docs/alerts.md has no \"## %s\" section", f, r.Alert, r.Alert)
			}
		}
	}
	require.NotEmpty(t, seen)
	for s := range sections {
		require.True(t, seen[s], "docs/alerts.md has a section for %s, which no rule defines", s)
	}
}
