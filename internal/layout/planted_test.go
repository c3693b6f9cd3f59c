package layout_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// plant writes files (path -> Go source) into a new tree of module
// example.com/svc and returns its root.
func plant(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files["go.mod"] = "module example.com/svc\n"
	for path, src := range files {
		p := filepath.Join(root, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	return root
}

func src(pkg string, imports ...string) string {
	return "package " + pkg + "\n\nimport (\n\t_ \"" + strings.Join(imports, "\"\n\t_ \"") + "\"\n)\n"
}

// Each domain rule fails on a planted violation, and holds on a tree
// without examples/ or the test-only domain.
func TestDomainRulesCatchPlantedViolations(t *testing.T) {
	t.Parallel()
	allowed := map[string]string{
		"domains/domains.go":           src("domains", "example.com/svc/apps/domain", "example.com/svc/domains/cards", "example.com/svc/examples/topup"),
		"domains/cards/domain.go":      src("cards", "example.com/svc/apps/domain", "example.com/svc/core/ports", "example.com/svc/adapters/postgres", "example.com/svc/internal/envconf", "example.com/svc/domains/cards/store", "github.com/uptrace/bun", "fmt"),
		"domains/cards/store/store.go": src("store", "example.com/svc/adapters/postgres/pgidem"),
	}
	bad, checked := violations(t, plant(t, allowed), "example.com/svc")
	require.Empty(t, bad, "rule: a domain may import core, adapters, envconf, the seam and itself; the list the domains")
	require.Positive(t, checked["domains"])

	for file, imp := range map[string]string{
		"domains/cards/x.go":                "example.com/svc/domains/orders",
		"domains/cards/store/x.go":          "example.com/svc/examples/topup",
		"domains/cards/y.go":                "example.com/svc/apps/internal/testdomain",
		"domains/cards/z.go":                "example.com/svc/apps/api",
		"domains/cards/w.go":                "example.com/svc/internal/appkit",
		"domains/cards/v.go":                "example.com/svc/domains",
		"examples/topup/x.go":               "example.com/svc/examples/devices",
		"apps/internal/testdomain/x.go":     "example.com/svc/domains/cards",
		"apps/internal/testdomain/sub/x.go": "example.com/svc/apps/internal/domains",
		"domains/domains_extra.go":          "example.com/svc/apps/api",
		"adapters/postgres/x.go":            "example.com/svc/domains/cards",
		"apps/domain/x.go":                  "example.com/svc/domains/cards",
	} {
		files := map[string]string{"domains/domains.go": src("domains", "example.com/svc/apps/domain")}
		files[file] = src(filepath.Base(filepath.Dir(file)), imp)
		bad, _ := violations(t, plant(t, files), "example.com/svc")
		require.Len(t, bad, 1, "%s importing %s", file, imp)
		require.Contains(t, bad[0], file+` imports "`+imp+`"`)
	}
}

// The handler rule fails on a planted handler that opens a transaction,
// and on a use case that imports HTTP, in any domain.
func TestHandlerRuleCatchesPlantedViolations(t *testing.T) {
	t.Parallel()
	handler := `package cards

import (
	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"
)

func create(c echo.Context, db *bun.DB) error { return db.RunInTx(c.Request().Context(), nil, nil) }
`
	script := `package cards

import (
	"context"

	"github.com/uptrace/bun"

	"example.com/svc/adapters/http/httpx"
)

var _ = httpx.ReadBody

func apply(ctx context.Context, db *bun.DB) error { return db.RunInTx(ctx, nil, nil) }
`
	for _, dir := range domainRoots {
		bad, _, _ := layerViolations(t, plant(t, map[string]string{dir + "/cards/api.go": handler}))
		require.Contains(t, strings.Join(bad, "\n"), dir+"/cards/api.go imports echo and reaches the database (RunInTx at line 8)")
		bad, _, _ = layerViolations(t, plant(t, map[string]string{dir + "/cards/service.go": script}))
		require.Len(t, bad, 1, dir)
		require.Contains(t, bad[0], `opens a transaction and imports "example.com/svc/adapters/http/httpx"`)
	}
}
