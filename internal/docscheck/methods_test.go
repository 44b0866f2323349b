package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxMethods is the most methods one type may have (issue 30, "smaller
// rooms"): past it a type holds more than one job, and is split by job, as
// gopls keeps one file per request family.
const maxMethods = 50

// methodCounts counts the methods of each named type in the Go files
// (tests excluded) under root's cmd and internal folders, keyed
// "<package folder>.<type>".
func methodCounts(root string) (map[string]int, error) {
	counts := map[string]int{}
	fset := token.NewFileSet()
	for _, top := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return fmt.Errorf("parse %s: %w", path, err)
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
					continue
				}
				if name := receiverType(fn.Recv.List[0].Type); name != "" {
					counts[filepath.ToSlash(rel)+"."+name]++
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// receiverType is the type name of a method's receiver (T, *T, T[P]).
func receiverType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.IndexListExpr:
		return receiverType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// overLimit lists the types of counts with more than limit methods, most
// first.
func overLimit(counts map[string]int, limit int) []string {
	var out []string
	for name, n := range counts {
		if n > limit {
			out = append(out, fmt.Sprintf("%s has %d methods", name, n))
		}
	}
	sort.Strings(out)
	return out
}

// TestNoTypeOverFiftyMethods: no type of ahpd has more than 50 methods.
func TestNoTypeOverFiftyMethods(t *testing.T) {
	counts, err := methodCounts(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) < 100 {
		t.Fatalf("only %d types with methods found: the walk missed the tree", len(counts))
	}
	for _, msg := range overLimit(counts, maxMethods) {
		t.Errorf("%s (at most %d: split it by job)", msg, maxMethods)
	}
}

// The counter itself: methods of one type in one package are summed over
// its files; the same name in two packages are two types; tests are not
// counted; pointer, value and generic receivers all count.
func TestMethodCounts(t *testing.T) {
	root := t.TempDir()
	write := func(path, src string) {
		t.Helper()
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("internal/a/a.go", "package a\ntype T struct{}\nfunc (t *T) A() {}\nfunc (t T) B() {}\n")
	write("internal/a/b.go", "package a\nfunc (t *T) C() {}\ntype G[P any] struct{}\nfunc (g *G[P]) D() {}\n")
	write("internal/a/a_test.go", "package a\nfunc (t *T) NotCounted() {}\n")
	write("internal/b/b.go", "package b\ntype T struct{}\nfunc (t *T) A() {}\nfunc F() {}\n")
	write("cmd/c/main.go", "package main\ntype V int\nfunc (V) M() {}\n")
	counts, err := methodCounts(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"internal/a.T": 3, "internal/a.G": 1, "internal/b.T": 1, "cmd/c.V": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
	if got := overLimit(counts, 2); len(got) != 1 || got[0] != "internal/a.T has 3 methods" {
		t.Fatalf("over 2: %v", got)
	}
}
