package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// maxFuncLines is the longest a hand-written function may be: one a reader
// can hold in mind. A longer one is a missing type (docs/internals.md).
const maxFuncLines = 150

// TestNoLongFunctions walks every hand-written Go file of the module,
// tests included.
func TestNoLongFunctions(t *testing.T) {
	root := testutil.RepoRoot()
	fset := token.NewFileSet()
	n := 0
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		if ast.IsGenerated(f) {
			return nil
		}
		n++
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if l := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; l > maxFuncLines {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: %s is %d lines, over %d", rel, fd.Name.Name, l, maxFuncLines)
			}
		}
		return nil
	})
	if n < 100 {
		t.Errorf("read %d Go files: the walk missed the tree", n)
	}
}
