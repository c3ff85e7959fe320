package mpi

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPINamesNoInternalType: package mpi is the face applications see, so
// no exported declaration (function, method, field, variable, constant,
// type) may name a type of another gompix package; applications would then
// depend on layers that are free to change.
func TestAPINamesNoInternalType(t *testing.T) {
	// Type-checking the source needs the Go toolchain (the GPU machine runs
	// prebuilt test binaries without one); every build machine has it.
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain to type-check the package's source")
	}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, af)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("github.com/gompix/gompix/mpi", fset, parsed, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range internalNames(pkg) {
		t.Errorf("exported API names an internal type: %s", bad)
	}
}

// internalNames lists the exported objects of pkg whose type names a type
// of another package of this module.
func internalNames(pkg *types.Package) []string {
	module := strings.TrimSuffix(pkg.Path(), "/mpi") + "/"
	w := &apiWalker{self: pkg, module: module, seen: map[types.Type]bool{}}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		if tn, ok := obj.(*types.TypeName); ok {
			w.named(name, tn.Type())
			continue
		}
		w.walk(name, obj.Type())
	}
	return w.bad
}

type apiWalker struct {
	self   *types.Package
	module string
	seen   map[types.Type]bool
	bad    []string
}

// named checks the exported surface of one of mpi's own types: its
// underlying type's exported parts and its exported methods.
func (w *apiWalker) named(at string, t types.Type) {
	if w.seen[t] {
		return
	}
	w.seen[t] = true
	n, ok := t.(*types.Named)
	if !ok {
		w.walk(at, t)
		return
	}
	if tp := n.TypeParams(); tp != nil {
		for i := 0; i < tp.Len(); i++ {
			w.walk(at+"["+tp.At(i).Obj().Name()+"]", tp.At(i).Constraint())
		}
	}
	w.walk(at, n.Underlying())
	for i := 0; i < n.NumMethods(); i++ {
		if m := n.Method(i); m.Exported() {
			w.walk(at+"."+m.Name(), m.Type())
		}
	}
}

func (w *apiWalker) walk(at string, t types.Type) {
	switch t := t.(type) {
	case *types.Named:
		obj := t.Obj()
		if p := obj.Pkg(); p != nil && p != w.self && strings.HasPrefix(p.Path()+"/", w.module) {
			w.bad = append(w.bad, at+": "+p.Path()+"."+obj.Name())
			return
		}
		if args := t.TypeArgs(); args != nil {
			for i := 0; i < args.Len(); i++ {
				w.walk(at, args.At(i))
			}
		}
		if obj.Pkg() == w.self && obj.Exported() {
			w.named(obj.Name(), t.Origin())
		}
	case *types.Pointer:
		w.walk(at, t.Elem())
	case *types.Slice:
		w.walk(at, t.Elem())
	case *types.Array:
		w.walk(at, t.Elem())
	case *types.Map:
		w.walk(at, t.Key())
		w.walk(at, t.Elem())
	case *types.Chan:
		w.walk(at, t.Elem())
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := 0; i < tup.Len(); i++ {
				w.walk(at, tup.At(i).Type())
			}
		}
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			if f := t.Field(i); f.Exported() {
				w.walk(at+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for i := 0; i < t.NumExplicitMethods(); i++ {
			if m := t.ExplicitMethod(i); m.Exported() {
				w.walk(at+"."+m.Name(), m.Type())
			}
		}
		for i := 0; i < t.NumEmbeddeds(); i++ {
			w.walk(at, t.EmbeddedType(i))
		}
	case *types.Union:
		for i := 0; i < t.Len(); i++ {
			w.walk(at, t.Term(i).Type())
		}
	}
}
