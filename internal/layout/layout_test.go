// Package layout_test enforces the dependency rules of the tree
// (docs/architecture.md, "Dependency rules"): dependencies point inward, apps compose adapter Modules
// and core services, and test helpers stay out of production code.
package layout_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rule is one dependency rule: files under dir (non-test) must not import
// what forbid reports; fix says what to move where. A dir that does not
// exist (examples/ after make remove-examples) is skipped.
type rule struct {
	dir    string
	forbid func(file, imp string) bool
	fix    string
}

// domainRoots are where domains live: the service's (domains/<name>), the
// examples (examples/<name>) and the foundation's test-only domain.
var domainRoots = []string{"domains", "examples", "apps/internal/testdomain"}

// domainOf is the domain a module-relative path belongs to
// ("domains/cards" for domains/cards/api.go), "list" for a file of the
// lists at the root of domains/ or examples/, "" outside every domain.
func domainOf(path string) string {
	if path == "apps/internal/testdomain" || strings.HasPrefix(path, "apps/internal/testdomain/") {
		return "apps/internal/testdomain"
	}
	parts := strings.SplitN(path, "/", 3)
	if parts[0] != "domains" && parts[0] != "examples" {
		return ""
	}
	if len(parts) == 1 || (len(parts) == 2 && strings.HasSuffix(parts[1], ".go")) {
		return "list"
	}
	return parts[0] + "/" + parts[1]
}

func rules(module string) []rule {
	in := func(imp, dir string) bool { return imp == module+"/"+dir || strings.HasPrefix(imp, module+"/"+dir+"/") }
	stdlib := func(imp string) bool { return !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") }
	family := func(path string) string { // adapters/<family>/...
		parts := strings.SplitN(path, "/", 3)
		if len(parts) < 2 {
			return ""
		}
		return parts[1]
	}
	aDomain := func(imp string) bool {
		return in(imp, "domains") || in(imp, "examples") || in(imp, "apps/internal/testdomain")
	}
	// A domain imports core, adapters, the seam and envconf (its settings),
	// and its own packages; the lists import the domains too.
	domainForbid := func(file, imp string) bool {
		rel, ok := strings.CutPrefix(imp, module+"/")
		switch {
		case !ok:
			return imp == module // else the standard library or another module
		case in(imp, "core"), in(imp, "adapters"), in(imp, "apps/domain"), in(imp, "internal/envconf"):
			return false
		case domainOf(file) == "list":
			return !aDomain(imp)
		default:
			return domainOf(rel) != domainOf(file)
		}
	}
	testHelpers := []string{"contracttests", "adapters/http/apitest"}
	rs := []rule{
		{"core", func(_, imp string) bool { return !stdlib(imp) && !in(imp, "core") },
			"core may import only the standard library and core/...: put the dependency behind a port in core/ports and implement it in adapters/"},
		{"adapters", func(_, imp string) bool { return in(imp, "apps") || aDomain(imp) || in(imp, "internal") },
			"adapters import core (and their own libraries), never apps, a domain or internal: move shared code into core/ or the adapter itself"},
		{"adapters", func(file, imp string) bool {
			return in(imp, "adapters") && family(strings.TrimPrefix(imp, module+"/")) != family(file)
		}, "an adapter never imports another adapter family: depend on a port (core/ports) and let apps/ wire the two together"},
		{"internal", func(_, imp string) bool { return in(imp, "adapters") || in(imp, "apps") || aDomain(imp) },
			"internal/ holds what the binaries share below the adapters: take the adapter's value as a parameter (see appkit.IDsFunc) instead of importing it"},
		{"apps", func(_, imp string) bool {
			return imp == "github.com/hibiken/asynq" || strings.HasPrefix(imp, "github.com/redis/rueidis")
		}, "apps compose adapter Modules and core services: move the asynq/rueidis code into adapters/asynq or adapters/redis and provide it from the package's fx Module"},
		{"apps/domain", func(_, imp string) bool {
			return imp == "go.uber.org/fx" || aDomain(imp) || (in(imp, "apps") && !in(imp, "apps/domain"))
		}, "apps/domain is the plain seam every domain imports: it names no fx tag, no binary and no domain; the apps turn its values into their graphs"},
	}
	for _, root := range domainRoots {
		rs = append(rs, rule{root, domainForbid,
			"a domain is business code like a downstream service's: it imports core, adapters, internal/envconf and the seam apps/domain, " +
				"never another domain (share through an event or core/) and never a binary; only the lists (domains/domains.go) import the domains"})
	}
	return append(rs, rule{".", func(_, imp string) bool {
		for _, h := range testHelpers {
			if in(imp, h) {
				return true
			}
		}
		return false
	}, "test helpers (contracttests, testinfra, apitest) are imported only from _test.go files"})
}

// violations checks every rule over the tree at root (module module) and
// returns what breaks them, and how many files each rule's dir holds.
func violations(t *testing.T, root, module string) ([]string, map[string]int) {
	t.Helper()
	fset := token.NewFileSet()
	checked := map[string]int{}
	var bad []string
	for _, r := range rules(module) {
		dir := filepath.Join(root, r.dir)
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			continue
		}
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "bench" || d.Name() == ".git" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != dir {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if r.dir == "." && strings.HasPrefix(rel, "contracttests/") {
				return nil // the suites and the harness may use each other
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked[r.dir]++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if r.forbid(rel, p) {
					bad = append(bad, fmt.Sprintf("%s imports %q: %s", rel, p, r.fix))
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	return bad, checked
}

func TestDependencyRules(t *testing.T) {
	t.Parallel()

	root := "../.."
	bad, checked := violations(t, root, modulePath(t, root))
	require.Empty(t, bad)
	// examples/ and the test-only domain may be absent; domains/ always
	// holds the service's list.
	for _, dir := range []string{"core", "adapters", "internal", "apps", "apps/domain", "domains", "."} {
		require.Positive(t, checked[dir], "no source files found under %s; is the test running in internal/layout?", dir)
	}
}

func modulePath(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatal("no module line in go.mod")
	return ""
}

// fx is the apps' business (DESIGN.md: core never sees fx), so core
// declares no fx tag either: a value group or a name is the wiring's, in
// apps/ or an adapter's fx.go.
func TestCoreNamesNoFxTags(t *testing.T) {
	t.Parallel()

	tag := regexp.MustCompile(`(group|name):\\?"`)
	err := filepath.WalkDir("../../core", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		require.False(t, tag.Match(b), "%s declares an fx tag (%s): move it to the app or adapter that wires it", path, tag.Find(b))
		return nil
	})
	require.NoError(t, err)
}
