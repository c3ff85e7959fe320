package mpi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommMethodsApplyHandler: every *Comm method of the face returns its
// errors through c.fail, so a communicator's error handler
// (SetErrorHandler) applies to every call on it; a bare face(err) there
// would skip ErrorsAreFatal.
func TestCommMethodsApplyHandler(t *testing.T) {
	files, err := filepath.Glob("face*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Body == nil || fn.Name.Name == "fail" {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			if id, ok := star.X.(*ast.Ident); !ok || id.Name != "Comm" {
				continue
			}
			checked++
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "face" {
						t.Errorf("%s: (*Comm).%s returns face(err); use c.fail(err) so the error handler applies",
							fset.Position(call.Pos()), fn.Name.Name)
					}
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d *Comm methods; the face has more", checked)
	}
}
