package docscheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The package table of docs/ARCHITECTURE.md ("## Packages"): one row per
// package, its floor, and exactly the project packages it imports. The rule
// the table states: a package imports only packages on a lower floor; an
// in-package test's imports keep that rule (they are compiled into the
// package), an external test package's (package x_test) need only be listed.

// archRow is one row of the package table. Package names are relative to
// the module path ("internal/ahp", "cmd/ahpd").
type archRow struct {
	line     int // in the file, for the messages
	pkg      string
	floor    int
	imports  []string // the "imports" column
	testAlso []string // the "tests also import" column
}

// pkgImports is what go list says one package imports, project packages
// only, named relative to the module path.
type pkgImports struct {
	imports      []string // its non-test code
	testImports  []string // its in-package _test.go files
	xtestImports []string // its package x_test files
}

// The columns the checker reads, by header; others (job) are prose.
const (
	colPackage  = "package"
	colFloor    = "floor"
	colImports  = "imports"
	colTestAlso = "tests also import"
)

// parseArchTable reads the first table under "## Packages" in lines (a
// whole markdown file called file in the messages). It returns the rows it
// could read and a message for each it could not.
func parseArchTable(file string, lines []string) ([]archRow, []string) {
	var bad []string
	errf := func(i int, format string, args ...any) {
		bad = append(bad, fmt.Sprintf("%s:%d: ", file, i+1)+fmt.Sprintf(format, args...))
	}
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "## Packages" })
	if start < 0 {
		return nil, []string{file + `: no "## Packages" section`}
	}
	i := start + 1
	for i < len(lines) && !strings.HasPrefix(lines[i], "|") && !strings.HasPrefix(lines[i], "## ") {
		i++
	}
	if i == len(lines) || !strings.HasPrefix(lines[i], "|") {
		return nil, []string{fmt.Sprintf("%s:%d: the Packages section has no table", file, start+1)}
	}
	header := splitCells(lines[i])
	col := map[string]int{}
	for j, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = j
	}
	for _, want := range []string{colPackage, colFloor, colImports, colTestAlso} {
		if _, ok := col[want]; !ok {
			errf(i, "the package table has no %q column (its header: %s)", want, lines[i])
		}
	}
	if len(bad) > 0 {
		return nil, bad
	}
	i++
	if i == len(lines) || strings.Trim(lines[i], "|-: ") != "" {
		errf(i, "the package table's header is not followed by its |---| line")
		return nil, bad
	}
	var rows []archRow
	for i++; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		cells := splitCells(lines[i])
		if len(cells) != len(header) {
			errf(i, "the row has %d cells, the header %d (an unescaped | in a cell?)", len(cells), len(header))
			continue
		}
		r := archRow{line: i + 1, pkg: strings.Trim(strings.TrimSpace(cells[col[colPackage]]), "`")}
		if r.pkg == "" || strings.ContainsAny(r.pkg, " \t") {
			errf(i, "the package cell %q is not one package path", cells[col[colPackage]])
			continue
		}
		floor, err := strconv.Atoi(strings.TrimSpace(cells[col[colFloor]]))
		if err != nil || floor < 0 {
			errf(i, "row %s: the floor %q is not a whole number ≥ 0", r.pkg, strings.TrimSpace(cells[col[colFloor]]))
			continue
		}
		r.floor = floor
		var ok bool
		if r.imports, ok = parseNames(cells[col[colImports]]); !ok {
			errf(i, "row %s: its imports name a package twice", r.pkg)
		}
		if r.testAlso, ok = parseNames(cells[col[colTestAlso]]); !ok {
			errf(i, "row %s: its tests-also-import names a package twice", r.pkg)
		}
		rows = append(rows, r)
	}
	return rows, bad
}

// splitCells splits a table line into its cells; \| is a | inside a cell.
func splitCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var cell strings.Builder
	for k := 0; k < len(line); k++ {
		switch {
		case line[k] == '\\' && k+1 < len(line) && line[k+1] == '|':
			cell.WriteByte('|')
			k++
		case line[k] == '|':
			cells = append(cells, cell.String())
			cell.Reset()
		default:
			cell.WriteByte(line[k])
		}
	}
	return append(cells, cell.String())
}

// parseNames reads a list cell: comma-separated names relative to
// internal/ (a name may also be written from the module root), "—" or
// nothing for none. ok is false when a name comes twice.
func parseNames(cell string) (names []string, ok bool) {
	ok = true
	for _, n := range strings.Split(cell, ",") {
		n = strings.Trim(strings.TrimSpace(n), "`")
		if n == "" || n == "—" || n == "-" {
			continue
		}
		if !strings.HasPrefix(n, "internal/") && !strings.HasPrefix(n, "cmd/") {
			n = "internal/" + n
		}
		if slices.Contains(names, n) {
			ok = false
			continue
		}
		names = append(names, n)
	}
	return names, ok
}

// short names a package as the table's list cells do.
func short(pkg string) string { return strings.TrimPrefix(pkg, "internal/") }

func shortList(pkgs []string) string {
	if len(pkgs) == 0 {
		return "—"
	}
	s := make([]string, len(pkgs))
	for i, p := range pkgs {
		s[i] = short(p)
	}
	return strings.Join(s, ", ")
}

// checkArch compares the table's rows with the packages go list found and
// returns one message for each way a row is wrong, naming the row and
// what to change; none when the table is true.
func checkArch(file string, rows []archRow, pkgs map[string]pkgImports) []string {
	var bad []string
	errf := func(r archRow, format string, args ...any) {
		bad = append(bad, fmt.Sprintf("%s:%d: row %s (floor %d): ", file, r.line, r.pkg, r.floor)+fmt.Sprintf(format, args...))
	}
	byPkg := map[string]archRow{}
	var unique []archRow
	for _, r := range rows {
		if first, dup := byPkg[r.pkg]; dup {
			errf(r, "a second row for the package (the first is line %d): keep one", first.line)
			continue
		}
		byPkg[r.pkg] = r
		unique = append(unique, r)
	}

	// The table against itself: what a row lists has a row, and its
	// imports sit on lower floors.
	for _, r := range unique {
		if _, ok := pkgs[r.pkg]; !ok {
			errf(r, "names no package (go list ./... does not list %s): remove the row or correct its name", r.pkg)
		}
		for _, q := range r.imports {
			qr, ok := byPkg[q]
			switch {
			case q == r.pkg:
				errf(r, "its imports list the package itself")
			case !ok:
				errf(r, "its imports list %s, which has no row", short(q))
			case qr.floor >= r.floor:
				errf(r, "its imports list %s, on floor %d, not below %d: raise %s above floor %d or lower %s (line %d) below %d",
					short(q), qr.floor, r.floor, r.pkg, qr.floor, q, qr.line, r.floor)
			}
		}
		for _, q := range r.testAlso {
			if slices.Contains(r.imports, q) {
				errf(r, "tests-also-import lists %s, which its imports already list: remove it from tests-also-import", short(q))
			} else if _, ok := byPkg[q]; !ok && q != r.pkg {
				errf(r, "tests-also-import lists %s, which has no row", short(q))
			}
		}
	}

	// Every package has a row.
	paths := make([]string, 0, len(pkgs))
	for p := range pkgs {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if _, ok := byPkg[p]; ok {
			continue
		}
		got := pkgs[p]
		imp, tests := importSets(p, got)
		floor := 0
		for _, q := range append(slices.Clone(imp), got.testImports...) {
			if qr, ok := byPkg[q]; ok && q != p && qr.floor >= floor {
				floor = qr.floor + 1
			}
		}
		bad = append(bad, fmt.Sprintf("%s: package %s has no row: add | `%s` | %d | <its job> | %s | %s |",
			file, p, p, floor, shortList(imp), strings.TrimSuffix(shortList(tests), "—")))
	}

	// Each row against what its package imports.
	for _, r := range unique {
		got, ok := pkgs[r.pkg]
		if !ok {
			continue
		}
		imp, tests := importSets(r.pkg, got)
		for _, q := range imp {
			if slices.Contains(r.imports, q) {
				continue // its floor is checked above
			}
			msg := fmt.Sprintf("imports %s, which its imports column does not list: add it", short(q))
			if qr, ok := byPkg[q]; ok && qr.floor >= r.floor {
				msg += fmt.Sprintf("; and %s is on floor %d, not below %d: raise %s or lower %s (line %d)",
					short(q), qr.floor, r.floor, r.pkg, q, qr.line)
			}
			errf(r, "%s", msg)
		}
		for _, q := range r.imports {
			switch {
			case slices.Contains(imp, q):
			case slices.Contains(tests, q):
				errf(r, "its imports list %s, which only its tests import: move it to tests-also-import", short(q))
			default:
				errf(r, "its imports list %s, which it does not import: remove it", short(q))
			}
		}
		for _, q := range tests {
			if !slices.Contains(r.testAlso, q) && !slices.Contains(r.imports, q) { // listed under imports: said above
				errf(r, "its tests import %s, which neither its imports nor tests-also-import list: add it to tests-also-import", short(q))
			}
		}
		for _, q := range r.testAlso {
			if !slices.Contains(tests, q) && !slices.Contains(r.imports, q) {
				if slices.Contains(imp, q) {
					errf(r, "tests-also-import lists %s, which its non-test code imports: move it to imports", short(q))
				} else {
					errf(r, "tests-also-import lists %s, which its tests do not import: remove it", short(q))
				}
			}
		}
		// An in-package test is compiled into the package: its imports
		// keep the floor rule (those its code makes too are checked above).
		for _, q := range got.testImports {
			if q == r.pkg || slices.Contains(imp, q) {
				continue
			}
			if qr, ok := byPkg[q]; ok && qr.floor >= r.floor {
				errf(r, "its in-package tests (package %s) import %s, on floor %d, not below %d: they keep the package's floor rule; move those tests to an external test package (package %s_test) or raise %s or lower %s (line %d)",
					filepath.Base(r.pkg), short(q), qr.floor, r.floor, filepath.Base(r.pkg), r.pkg, q, qr.line)
			}
		}
	}
	return bad
}

// importSets returns, sorted and without the package itself, what p's
// non-test code imports and what its tests import beyond that.
func importSets(p string, got pkgImports) (imp, tests []string) {
	for _, q := range got.imports {
		if q != p && !slices.Contains(imp, q) {
			imp = append(imp, q)
		}
	}
	for _, q := range slices.Concat(got.testImports, got.xtestImports) {
		if q != p && !slices.Contains(imp, q) && !slices.Contains(tests, q) {
			tests = append(tests, q)
		}
	}
	slices.Sort(imp)
	slices.Sort(tests)
	return imp, tests
}

// goListImports runs go list in the module at root and returns every
// package of the module (test-only ones too) with the project packages it
// imports, by path relative to the module path.
func goListImports(t *testing.T, root string) map[string]pkgImports {
	t.Helper()
	goBin, err := exec.LookPath("go") // go test puts its GOROOT/bin first on PATH
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-e", "-json=ImportPath,Module,Imports,TestImports,XTestImports,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	type listed struct {
		ImportPath                         string
		Module                             *struct{ Path string }
		Imports, TestImports, XTestImports []string
		Error                              *struct{ Err string }
	}
	var all []listed
	module := ""
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list ./... output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: package %s: %s", p.ImportPath, p.Error.Err)
		}
		if p.Module == nil {
			t.Fatalf("go list: package %s is in no module", p.ImportPath)
		}
		if module == "" {
			module = p.Module.Path
		}
		all = append(all, p)
	}
	if len(all) == 0 {
		t.Fatal("go list ./... listed nothing")
	}
	rel := func(paths []string) []string {
		var out []string
		for _, q := range paths {
			if r, ok := strings.CutPrefix(q, module+"/"); ok {
				out = append(out, r)
			}
		}
		return out
	}
	pkgs := map[string]pkgImports{}
	for _, p := range all {
		r, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			t.Fatalf("go list: package %s is outside module %s", p.ImportPath, module)
		}
		pkgs[r] = pkgImports{imports: rel(p.Imports), testImports: rel(p.TestImports), xtestImports: rel(p.XTestImports)}
	}
	return pkgs
}

// TestArchitectureTableMatchesImports: docs/ARCHITECTURE.md's package table
// has one row per package, each row's imports are exactly what go list says
// the package imports, and every import is on a lower floor (issue 30).
func TestArchitectureTableMatchesImports(t *testing.T) {
	root := repoRoot(t)
	const file = "docs/ARCHITECTURE.md"
	rows, bad := parseArchTable(file, lines(t, filepath.Join(root, file)))
	if len(rows) == 0 {
		t.Fatalf("%s: the package table has no rows\n%s", file, strings.Join(bad, "\n"))
	}
	bad = append(bad, checkArch(file, rows, goListImports(t, root))...)
	for _, m := range bad {
		t.Error(m)
	}
}

// archDoc is a small true table for the checker's own test: c on floor 2
// imports b on floor 1, which imports a on floor 0; c's external tests
// import d, which imports c.
const archDoc = `# x

## Packages

Words.

| package | floor | job | imports | tests also import |
|---|---|---|---|---|
| ` + "`cmd/d`" + ` | 3 | a command \| with a pipe | c | |
| ` + "`internal/c`" + ` | 2 | c's job | a, b | ` + "`cmd/d`" + ` |
| ` + "`internal/b`" + ` | 1 | b's job | a | |
| ` + "`internal/a`" + ` | 0 | a's job | — | |

## Next
`

func archPkgs() map[string]pkgImports {
	return map[string]pkgImports{
		"cmd/d":      {imports: []string{"internal/c"}},
		"internal/c": {imports: []string{"internal/a", "internal/b"}, xtestImports: []string{"internal/c", "cmd/d"}},
		"internal/b": {imports: []string{"internal/a"}, testImports: []string{"internal/a"}},
		"internal/a": {},
	}
}

// TestArchitectureCheckerReportsWrongRows: the checker passes a true table
// and names the row and the fault of each wrong one.
func TestArchitectureCheckerReportsWrongRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  func(string) string // rewrites archDoc
		pkgs func(map[string]pkgImports)
		want []string // one message each, by substring
	}{
		{name: "true table"},
		{
			name: "package without a row",
			pkgs: func(p map[string]pkgImports) { p["internal/e"] = pkgImports{imports: []string{"internal/b"}} },
			want: []string{"x.md: package internal/e has no row: add | `internal/e` | 2 | <its job> | b |"},
		},
		{
			name: "row naming no package",
			doc: func(d string) string {
				return strings.Replace(d, "| `internal/a` |", "| `internal/z` | 0 | z | — | |\n| `internal/a` |", 1)
			},
			want: []string{"x.md:12: row internal/z (floor 0): names no package (go list ./... does not list internal/z)"},
		},
		{
			name: "import not listed",
			pkgs: func(p map[string]pkgImports) { p["cmd/d"] = pkgImports{imports: []string{"internal/c", "internal/a"}} },
			want: []string{"x.md:9: row cmd/d (floor 3): imports a, which its imports column does not list: add it"},
		},
		{
			name: "import not listed and up",
			pkgs: func(p map[string]pkgImports) {
				p["internal/a"] = pkgImports{imports: []string{"internal/b"}}
			},
			want: []string{"x.md:12: row internal/a (floor 0): imports b, which its imports column does not list: add it; and b is on floor 1, not below 0: raise internal/a or lower internal/b (line 11)"},
		},
		{
			name: "listed import on a higher floor",
			doc:  func(d string) string { return strings.Replace(d, "| `internal/b` | 1 |", "| `internal/b` | 2 |", 1) },
			want: []string{"x.md:10: row internal/c (floor 2): its imports list b, on floor 2, not below 2: raise internal/c above floor 2 or lower internal/b (line 11) below 2"},
		},
		{
			name: "listed import no longer made",
			pkgs: func(p map[string]pkgImports) {
				p["internal/c"] = pkgImports{imports: []string{"internal/b"}, xtestImports: []string{"cmd/d"}}
			},
			want: []string{"x.md:10: row internal/c (floor 2): its imports list a, which it does not import: remove it"},
		},
		{
			name: "listed import only tests make",
			pkgs: func(p map[string]pkgImports) { p["internal/b"] = pkgImports{testImports: []string{"internal/a"}} },
			want: []string{"x.md:11: row internal/b (floor 1): its imports list a, which only its tests import: move it to tests-also-import"},
		},
		{
			name: "test import not listed",
			pkgs: func(p map[string]pkgImports) {
				p["internal/b"] = pkgImports{imports: []string{"internal/a"}, xtestImports: []string{"internal/c"}}
			},
			want: []string{"x.md:11: row internal/b (floor 1): its tests import c, which neither its imports nor tests-also-import list: add it to tests-also-import"},
		},
		{
			name: "in-package test import up",
			doc: func(d string) string {
				return strings.Replace(d, "| `internal/b` | 1 | b's job | a | |", "| `internal/b` | 1 | b's job | a | c |", 1)
			},
			pkgs: func(p map[string]pkgImports) {
				p["internal/b"] = pkgImports{imports: []string{"internal/a"}, testImports: []string{"internal/c"}}
			},
			want: []string{"x.md:11: row internal/b (floor 1): its in-package tests (package b) import c, on floor 2, not below 1"},
		},
		{
			name: "tests-also-import stale",
			pkgs: func(p map[string]pkgImports) {
				p["internal/c"] = pkgImports{imports: []string{"internal/a", "internal/b"}}
			},
			want: []string{"x.md:10: row internal/c (floor 2): tests-also-import lists cmd/d, which its tests do not import: remove it"},
		},
		{
			name: "row twice",
			doc: func(d string) string {
				return strings.Replace(d, "| `internal/a` | 0 | a's job | — | |", "| `internal/a` | 0 | a's job | — | |\n| `internal/a` | 0 | again | — | |", 1)
			},
			want: []string{"x.md:13: row internal/a (floor 0): a second row for the package (the first is line 12): keep one"},
		},
		{
			name: "floor not a number",
			doc:  func(d string) string { return strings.Replace(d, "| `internal/b` | 1 |", "| `internal/b` | one |", 1) },
			want: []string{
				`x.md:11: row internal/b: the floor "one" is not a whole number ≥ 0`,
				"x.md:10: row internal/c (floor 2): its imports list b, which has no row",
				"x.md: package internal/b has no row",
			},
		},
		{
			name: "column missing",
			doc:  func(d string) string { return strings.Replace(d, "| tests also import |", "| tests |", 1) },
			want: []string{`x.md:7: the package table has no "tests also import" column`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := archDoc
			if tc.doc != nil {
				doc = tc.doc(doc)
			}
			pkgs := archPkgs()
			if tc.pkgs != nil {
				tc.pkgs(pkgs)
			}
			rows, got := parseArchTable("x.md", strings.Split(doc, "\n"))
			if rows != nil {
				got = append(got, checkArch("x.md", rows, pkgs)...)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d messages, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("message %d:\n got  %s\n want %s…", i, got[i], w)
				}
			}
		})
	}
}
